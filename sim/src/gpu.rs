//! GPU descriptions: the few numbers the model needs, read from TOML or JSON. Five are built
//! in (`a6000`, `a100-80gb`, `h100`, `h200`, `apple-m2`); the files are in `sim/gpus/`.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// One GPU, as the model sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gpu {
    /// Short name (`a6000`).
    pub name: String,
    /// One line for reports.
    pub description: String,
    /// Streaming multiprocessors (compute units, GPU cores).
    pub sms: u32,
    /// Clock in MHz.
    pub clock_mhz: f64,
    /// 32-bit integer operations per clock per SM (multiply-add rate).
    pub int_ops_per_clk_per_sm: f64,
    /// Threads an SM keeps resident (occupancy limit).
    pub resident_threads_per_sm: u32,
    /// Register file per SM in KB (reported; the model does not use it).
    pub register_file_kb_per_sm: u32,
    /// L1/shared memory per SM in KB (reported; the model does not use it).
    pub l1_kb_per_sm: u32,
    /// Last-level cache in MB.
    pub l2_mb: f64,
    /// DRAM bandwidth in GB/s.
    pub dram_gbs: f64,
    /// L2 bandwidth in GB/s.
    pub l2_gbs: f64,
    /// DRAM load latency in cycles (converter latency is added to it).
    pub dram_latency_cycles: f64,
    /// Launch overhead per dispatch in microseconds.
    pub launch_us: f64,
    /// Words per clock per SM of the hypothetical hardware PRNG unit.
    pub prng_unit_words_per_clk_per_sm: f64,
    /// Whether the GPU's WebGPU adapter has `SHADER_INT64` (64-bit integers in shaders), so
    /// that the device selects native 64-bit products (`shared/mul_native.wgsl`); false (the
    /// default when absent) means the emulated ones.
    #[serde(default)]
    pub shader_int64: bool,
    /// Where the numbers come from.
    pub source: String,
}

/// The built-in descriptions, `(name, TOML text)`.
pub const BUILT_IN: [(&str, &str); 5] = [
    ("a6000", include_str!("../gpus/a6000.toml")),
    ("a100-80gb", include_str!("../gpus/a100-80gb.toml")),
    ("h100", include_str!("../gpus/h100.toml")),
    ("h200", include_str!("../gpus/h200.toml")),
    ("apple-m2", include_str!("../gpus/apple-m2.toml")),
];

impl Gpu {
    /// A built-in description by name, or a `.toml`/`.json` file.
    pub fn load(name: &str) -> Result<Self> {
        if let Some((_, text)) = BUILT_IN.iter().find(|(n, _)| *n == name) {
            return Self::from_toml(name, text);
        }
        let path = std::path::Path::new(name);
        if !path.exists() {
            return Err(Error::UnknownGpu(name.to_string()));
        }
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io { path: name.to_string(), source })?;
        if name.ends_with(".json") {
            let gpu: Self = serde_json::from_str(&text)
                .map_err(|e| Error::Gpu { name: name.to_string(), reason: e.to_string() })?;
            gpu.validate(name)
        } else {
            Self::from_toml(name, &text)
        }
    }

    /// Parses TOML text.
    pub fn from_toml(name: &str, text: &str) -> Result<Self> {
        let gpu: Self =
            toml::from_str(text).map_err(|e| Error::Gpu { name: name.to_string(), reason: e.to_string() })?;
        gpu.validate(name)
    }

    /// Checks that every rate and size is positive and finite.
    fn validate(self, name: &str) -> Result<Self> {
        let positive = [
            ("clock_mhz", self.clock_mhz),
            ("int_ops_per_clk_per_sm", self.int_ops_per_clk_per_sm),
            ("l2_mb", self.l2_mb),
            ("dram_gbs", self.dram_gbs),
            ("l2_gbs", self.l2_gbs),
            ("dram_latency_cycles", self.dram_latency_cycles),
            ("prng_unit_words_per_clk_per_sm", self.prng_unit_words_per_clk_per_sm),
        ];
        for (field, v) in positive {
            if !(v.is_finite() && v > 0.0) {
                return Err(Error::Gpu { name: name.to_string(), reason: format!("{field} must be positive") });
            }
        }
        if self.sms == 0 || self.resident_threads_per_sm == 0 || !(self.launch_us.is_finite() && self.launch_us >= 0.0)
        {
            return Err(Error::Gpu {
                name: name.to_string(),
                reason: "sms and resident_threads_per_sm must be positive, launch_us not negative".into(),
            });
        }
        Ok(self)
    }

    /// Clock in Hz.
    #[must_use]
    pub fn clock_hz(&self) -> f64 {
        self.clock_mhz * 1e6
    }

    /// Peak 32-bit integer operations per second.
    #[must_use]
    pub fn int_ops_per_s(&self) -> f64 {
        f64::from(self.sms) * self.int_ops_per_clk_per_sm * self.clock_hz()
    }

    /// L2 capacity in bytes.
    #[must_use]
    pub fn l2_bytes(&self) -> f64 {
        self.l2_mb * 1024.0 * 1024.0
    }
}

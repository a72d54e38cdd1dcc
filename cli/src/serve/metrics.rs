//! Prometheus text metrics: requests by route and status, a latency histogram by route, queue
//! depth, compute in flight, resident key bytes, the device memory the GPU's buffers hold, the
//! prepared plaintexts and the process's resident set.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use super::engine::Engine;

/// Upper bounds of the latency histogram, seconds.
const BUCKETS: [f64; 12] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

/// One route's latency histogram.
#[derive(Default)]
struct Histogram {
    /// Requests at or below each bound (cumulative, as Prometheus counts them).
    buckets: [u64; BUCKETS.len()],
    count: u64,
    sum_micros: u64,
}

/// The counters.
#[derive(Default)]
pub(crate) struct Metrics {
    by_status: Mutex<BTreeMap<(String, u16), u64>>,
    /// Latency by route template, so that scrapes and health checks stay out of the
    /// inference latency.
    latency: Mutex<BTreeMap<String, Histogram>>,
    /// Requests waiting for a compute slot.
    pub queued: AtomicU64,
    /// Requests computing.
    pub running: AtomicU64,
}

impl Metrics {
    /// Records one finished request.
    pub(crate) fn record(&self, route: &str, status: u16, seconds: f64) {
        *self
            .by_status
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry((route.to_owned(), status))
            .or_insert(0) += 1;
        let mut latency = self.latency.lock().unwrap_or_else(PoisonError::into_inner);
        let h = latency.entry(route.to_owned()).or_default();
        for (b, &le) in h.buckets.iter_mut().zip(BUCKETS.iter()) {
            if seconds <= le {
                *b += 1;
            }
        }
        h.count += 1;
        h.sum_micros += (seconds * 1e6) as u64;
    }

    /// The text exposition.
    pub(crate) fn render(&self, engine: &dyn Engine) -> String {
        let (resident_bytes, resident_sets) = engine.resident_keys();
        let prepared = engine.prepared();
        let mut s = String::new();
        let _ = writeln!(s, "# HELP wgfhe_requests_total Requests answered, by route and status.");
        let _ = writeln!(s, "# TYPE wgfhe_requests_total counter");
        for ((route, status), n) in self.by_status.lock().unwrap_or_else(PoisonError::into_inner).iter() {
            let _ = writeln!(s, "wgfhe_requests_total{{route=\"{route}\",status=\"{status}\"}} {n}");
        }
        let _ = writeln!(s, "# HELP wgfhe_request_seconds Request latency, by route.");
        let _ = writeln!(s, "# TYPE wgfhe_request_seconds histogram");
        for (route, h) in self.latency.lock().unwrap_or_else(PoisonError::into_inner).iter() {
            for (n, le) in h.buckets.iter().zip(BUCKETS.iter()) {
                let _ = writeln!(s, "wgfhe_request_seconds_bucket{{route=\"{route}\",le=\"{le}\"}} {n}");
            }
            let _ = writeln!(s, "wgfhe_request_seconds_bucket{{route=\"{route}\",le=\"+Inf\"}} {}", h.count);
            let _ = writeln!(s, "wgfhe_request_seconds_sum{{route=\"{route}\"}} {}", h.sum_micros as f64 / 1e6);
            let _ = writeln!(s, "wgfhe_request_seconds_count{{route=\"{route}\"}} {}", h.count);
        }
        let gauges = [
            ("wgfhe_queue_depth", "Requests waiting for a compute slot.", self.queued.load(Ordering::Relaxed)),
            ("wgfhe_compute_in_flight", "Requests computing.", self.running.load(Ordering::Relaxed)),
            ("wgfhe_resident_key_bytes", "Parsed evaluation-key bytes held on the backend.", resident_bytes),
            ("wgfhe_resident_key_sets", "Key sets held parsed on the backend.", resident_sets as u64),
            ("wgfhe_process_resident_bytes", "The process's resident set size.", rss_bytes()),
            ("wgfhe_prepared_plaintexts", "The CNN's plaintexts prepared at start.", prepared.at_start),
            ("wgfhe_prepared_plaintext_bytes", "Their resident bytes.", prepared.bytes),
        ];
        for (name, help, v) in gauges {
            let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
        }
        let name = "wgfhe_plaintexts_prepared_on_request_total";
        let help = "Plaintexts requests had to prepare (not found prepared at start).";
        let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}", prepared.on_request);
        // Only where there is a device (absent on the CPU backend, not zero).
        if let Some(m) = engine.device_memory() {
            let device = [
                (
                    "wgfhe_device_buffer_bytes",
                    "Device memory bound to the GPU's live buffers (wgpu's count).",
                    m.buffer_bytes,
                ),
                ("wgfhe_device_buffers", "The GPU's live buffers.", m.buffers),
                ("wgfhe_device_pool_idle_bytes", "Of those bytes, the buffer pool's idle buffers.", m.pool.bytes),
            ];
            for (name, help, v) in device {
                let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
            }
        }
        if let Some(c) = engine.device_counters() {
            let counters = [
                ("wgfhe_device_dispatches_total", "GPU compute dispatches recorded.", c.dispatches as f64),
                ("wgfhe_device_submissions_total", "GPU queue submissions.", c.submissions as f64),
                (
                    "wgfhe_device_pipelines_built_total",
                    "GPU pipelines compiled (at start, by the warm-up).",
                    c.pipelines_built as f64,
                ),
                (
                    "wgfhe_device_pipeline_build_seconds_total",
                    "Host time compiling them.",
                    c.pipeline_build_ns as f64 / 1e9,
                ),
                (
                    "wgfhe_device_seconds_total",
                    "Device time of the timed submissions (the device's timestamps; 0 without them).",
                    c.device_ns as f64 / 1e9,
                ),
            ];
            for (name, help, v) in counters {
                let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {v}");
            }
        }
        s
    }
}

/// The process's resident set size (Linux `/proc/self/statm`; 0 elsewhere).
pub(crate) fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|p| p.parse::<u64>().ok()))
        .map_or(0, |pages| pages * 4096)
}

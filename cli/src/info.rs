//! `wgfhe info`: the build, the schemes and the GPU adapter (if any).

use wgfhe::backend::gpu::GpuDevice;

/// Runs `wgfhe info [--json]`.
pub(crate) fn run(json: bool) -> wgfhe::Result<()> {
    let dev = GpuDevice::new();
    if json {
        let value = match &dev {
            Ok(d) => serde_json::json!({
                "backend": "gpu",
                "adapter": d.summary(),
                "limits": {
                    "max_storage_buffer_binding_size": d.limits().max_storage_buffer_binding_size,
                    "max_buffer_size": d.limits().max_buffer_size,
                    "max_storage_buffers_per_shader_stage": d.limits().max_storage_buffers_per_shader_stage,
                    "max_compute_workgroups_per_dimension": d.limits().max_compute_workgroups_per_dimension,
                },
                "features": d.summary().features,
                "arithmetic": d.arithmetic(),
                "immediates": d.uses_immediates(),
            }),
            Err(e) => {
                serde_json::json!({"backend": "cpu", "adapter": null, "reason": e.to_string(), "limits": {}, "features": []})
            }
        };
        println!("{value:#}");
        return Ok(());
    }
    println!("wgfhe {}", env!("CARGO_PKG_VERSION"));
    match &dev {
        Ok(d) => {
            println!(
                "gpu: {} ({}, {}, {})",
                d.summary().name,
                d.summary().backend,
                d.summary().device_type,
                d.summary().driver
            );
            println!("gpu features: {}", d.summary().features.join(", "));
            println!(
                "gpu arithmetic: {:?}, parameters {}{}",
                d.arithmetic(),
                if d.uses_immediates() { "as immediates" } else { "in an arena" },
                if d.summary().is_software() {
                    " (software renderer: WGFHE_BACKEND=auto uses the CPU backend)"
                } else {
                    ""
                }
            );
        }
        Err(e) => println!("gpu: none ({e})"),
    }
    println!("backends: cpu (reference, rayon across limbs), gpu (wgpu + WGSL)");
    println!("schemes: BGV (batch and coefficient encoding, hybrid key switching, modulus switching)");
    println!("         CKKS (canonical-embedding encoder, rescaling with 2^30 or 2^60 scales, rotations, conjugation)");
    Ok(())
}

use super::pool::MIN_CLASS;
use super::*;

#[test]
fn size_classes_waste_under_an_eighth() {
    let mut sizes: Vec<u64> = (1..=4096u64).map(|w| 4 * w).collect();
    // Every power of two and its neighbours up to 4 GiB, and the buffers of real rings.
    for e in 10..32 {
        let p = 1u64 << e;
        sizes.extend([p - 4, p, p + 4, p + p / 3 / 4 * 4]);
    }
    for limbs in 1..=64u64 {
        sizes.push(limbs * 65_536 * 4);
        sizes.push(limbs * 16_384 * 4);
    }
    for &b in &sizes {
        let c = size_class(b);
        assert!(c >= b, "class {c} below {b}");
        assert_eq!(c % 4, 0);
        if b > MIN_CLASS {
            assert!((c - b) * 8 < b, "class {c} for {b} bytes wastes an eighth or more");
        } else {
            assert_eq!(c, MIN_CLASS);
        }
        // Classes are stable: a class is its own class.
        assert_eq!(size_class(c), c);
    }
    // The case that used to take 32 MiB: 63 limbs of 2^16 words.
    let b = 63 * 65_536 * 4;
    assert!(size_class(b) <= b + b / 8);
    // Eight classes per power of two.
    let classes: std::collections::BTreeSet<u64> = ((1u64 << 20) + 4..=(1 << 21)).step_by(4).map(size_class).collect();
    assert_eq!(classes.len(), 8);
}

fn summary(name: &str, device_type: &str) -> AdapterSummary {
    AdapterSummary {
        name: name.into(),
        backend: "Vulkan".into(),
        device_type: device_type.into(),
        driver: String::new(),
        features: Vec::new(),
        arithmetic: Arithmetic::Emulated,
    }
}

#[test]
fn software_adapters_are_recognised() {
    assert!(summary("llvmpipe (LLVM 15.0.6, 256 bits)", "Cpu").is_software());
    assert!(summary("SwiftShader Device (Subzero)", "Cpu").is_software());
    assert!(summary("Microsoft Basic Render Driver", "Cpu").is_software());
    // By name where a driver reports another type.
    assert!(summary("llvmpipe (LLVM 17)", "Other").is_software());
    assert!(!summary("NVIDIA H200", "DiscreteGpu").is_software());
    assert!(!summary("Intel(R) Iris(R) Xe Graphics", "IntegratedGpu").is_software());
    assert!(!summary("Apple M2", "IntegratedGpu").is_software());
}

#[test]
fn dispatch_grids_respect_the_per_dimension_limit() {
    let max = 65_535u32;
    let m = u64::from(max);
    assert_eq!(grid(1, max).unwrap(), (1, 1));
    assert_eq!(grid(256 * m, max).unwrap(), (max, 1));
    assert_eq!(grid(256 * m + 1, max).unwrap(), (max, 2));
    assert_eq!(grid(256 * m * m, max).unwrap(), (max, max));
    // One workgroup more than the grid holds, and the largest count there is: typed errors.
    for threads in [256 * m * m + 1, u64::MAX] {
        assert!(matches!(grid(threads, max), Err(Error::AdapterLimit { .. })), "{threads}");
    }
    // A smaller device limit is the one that counts.
    assert_eq!(grid(256 * 100, 10).unwrap(), (10, 10));
    assert!(matches!(grid(256 * 101, 10), Err(Error::AdapterLimit { .. })));
    // Every grid covers its threads.
    for threads in [1, 255, 256, 257, 1 << 20, 256 * m + 7, 3 << 30] {
        let (x, y) = grid(threads, max).unwrap();
        assert!(u64::from(x) * u64::from(y) * WORKGROUP_SIZE >= threads);
    }
}

#[test]
fn counters_subtract() {
    let a = DeviceCounters { dispatches: 5, submissions: 2, uploads: 3, upload_bytes: 40, ..DeviceCounters::default() };
    let b = DeviceCounters { dispatches: 9, submissions: 3, uploads: 4, upload_bytes: 48, readbacks: 1, ..a };
    let d = b - a;
    assert_eq!((d.dispatches, d.submissions, d.uploads, d.upload_bytes, d.readbacks), (4, 1, 1, 8, 1));
    assert_eq!(a - b, DeviceCounters::default());
}

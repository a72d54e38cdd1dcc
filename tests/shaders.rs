//! Every kernel's WGSL parses and validates with naga exactly as the device builds it (the
//! backend's own assembly, `wgfhe::backend::gpu::sources`: the shared arithmetic, the wide
//! product of the device's arithmetic, then the kernel's files), for both arithmetics (native
//! 64-bit integers validated with naga's `SHADER_INT64` capability, the emulated one without
//! it), its entry point is a compute entry of the module, and the files it names exist under
//! `shaders/`; every file under `shaders/` is used by some kernel; generated fused kernels of
//! several shapes validate too. On any machine, GPU or not.

#![expect(clippy::unwrap_used, clippy::panic, reason = "tests")]

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use wgfhe::backend::fused::{Expr, Format, Operand, Program, Traffic};
use wgfhe::backend::gpu::sources::{IMMEDIATE_WORDS, KERNELS, PARAMS_DECLARATION};
use wgfhe::backend::gpu::{fused_kernel_sources, fused_kernel_sources_for, Arithmetic};
use wgfhe::backend::CpuBackend;
use wgfhe::math::sampling::Purpose;

/// The naga capabilities a device with `arithmetic` has (none beyond WebGPU's for the emulated
/// one: its kernels must validate without 64-bit integers).
fn capabilities(arithmetic: Arithmetic) -> naga::valid::Capabilities {
    match arithmetic {
        Arithmetic::Emulated => naga::valid::Capabilities::empty(),
        Arithmetic::NativeInt64 => naga::valid::Capabilities::SHADER_INT64,
    }
}

fn validate(name: &str, source: &str, arithmetic: Arithmetic) -> naga::Module {
    validate_with(name, source, arithmetic, naga::valid::Capabilities::empty())
}

fn validate_with(name: &str, source: &str, arithmetic: Arithmetic, extra: naga::valid::Capabilities) -> naga::Module {
    let module = naga::front::wgsl::parse_str(source)
        .unwrap_or_else(|e| panic!("{name}: {}\n{source}", e.emit_to_string(source)));
    naga::valid::Validator::new(naga::valid::ValidationFlags::all(), capabilities(arithmetic) | extra)
        .validate(&module)
        .unwrap_or_else(|e| panic!("{name} ({arithmetic:?}): {e:?}\n{source}"));
    module
}

fn shaders_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders")
}

/// Every `.wgsl` file under `dir`, recursively, as paths relative to `root`.
fn wgsl_files(root: &Path, dir: &Path, out: &mut Vec<String>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            wgsl_files(root, &path, out);
        } else if path.extension().and_then(|e| e.to_str()) == Some("wgsl") {
            out.push(path.strip_prefix(root).unwrap().to_str().unwrap().replace('\\', "/"));
        }
    }
}

#[test]
fn every_kernel_validates_as_the_device_builds_it() {
    let root = shaders_dir();
    let shared = fs::read_to_string(root.join("shared/zq.wgsl")).unwrap();
    let mut names = BTreeSet::new();
    for k in KERNELS {
        assert!(names.insert(k.name), "kernel {} listed twice", k.name);
        assert_eq!(k.wgsl(), k.wgsl_for(Arithmetic::Emulated));
        for arithmetic in Arithmetic::ALL {
            let wgsl = k.wgsl_for(arithmetic);
            let module = validate(k.name, &wgsl, arithmetic);
            // The variant taking its parameters as immediates: the same source, the parameters'
            // declaration aside.
            let immediate = k.wgsl_immediate(arithmetic).unwrap_or_else(|| panic!("{}: no immediate variant", k.name));
            assert_eq!(
                immediate
                    .replace(&format!("var<immediate> params: array<u32, {IMMEDIATE_WORDS}>;"), PARAMS_DECLARATION),
                wgsl
            );
            let imm = validate_with(k.name, &immediate, arithmetic, naga::valid::Capabilities::IMMEDIATES);
            assert!(imm.entry_points.iter().any(|e| e.name == k.entry));
            assert!(
                module.entry_points.iter().any(|e| e.name == k.entry && e.stage == naga::ShaderStage::Compute),
                "{}: no compute entry point {}",
                k.name,
                k.entry
            );
            // The source is the shared arithmetic, the wide product, then the kernel's files as
            // they are on disk.
            assert!(wgsl.starts_with(&shared), "{}: the shared arithmetic does not come first", k.name);
            assert!(!k.files.is_empty(), "{}: no source file", k.name);
            let mut rest = &wgsl[shared.len()..];
            for file in std::iter::once(arithmetic.file()).chain(k.files.iter().copied()) {
                let text = fs::read_to_string(root.join(file))
                    .unwrap_or_else(|e| panic!("{}: shaders/{file} is missing ({e})", k.name));
                let at = rest.find(&text).unwrap_or_else(|| panic!("{}: shaders/{file} is not in its source", k.name));
                rest = &rest[at + text.len()..];
            }
        }
    }
    // The kernels the host code dispatches, by name (a kernel dropped from the list fails here).
    let want = [
        "automorphism",
        "base_convert",
        "elementwise",
        "gates_decompose",
        "gates_inverse",
        "gates_key_product",
        "key_switch_inner_product",
        "ntt_fwd_columns_1024",
        "ntt_fwd_columns_2048",
        "ntt_fwd_columns_4096",
        "ntt_fwd_rows_1024",
        "ntt_fwd_rows_2048",
        "ntt_fwd_rows_4096",
        "ntt_inv_columns_1024",
        "ntt_inv_columns_2048",
        "ntt_inv_columns_4096",
        "ntt_inv_rows_1024",
        "ntt_inv_rows_2048",
        "ntt_inv_rows_4096",
        "ntt_inv_rows_from_1024",
        "ntt_inv_rows_from_2048",
        "ntt_inv_rows_from_4096",
        "scale_down_correction",
        "scale_down_digits",
        "uniform",
    ];
    assert_eq!(names.into_iter().collect::<Vec<_>>(), want);
}

/// Whether any function of `module` masks with `0xffff`: the 16-bit split of an emulated 32x32
/// product (no kernel uses that literal for anything else).
fn splits_into_halves(module: &naga::Module) -> bool {
    let halves = |f: &naga::Function| {
        f.expressions.iter().any(|(_, e)| matches!(e, naga::Expression::Literal(naga::Literal::U32(0xffff))))
    };
    module.functions.iter().any(|(_, f)| halves(f)) || module.entry_points.iter().any(|e| halves(&e.function))
}

/// On a device with native 64-bit integers no kernel forms a product from 16-bit halves: the
/// scalar `mul_wide` and the four-lane `mul_wide4` (base conversion, the scale-down correction,
/// the key-switch inner product) are native u64 products; the emulated build still splits. The
/// device test `every_device_path_matches_cpu` (tests/gpu.rs) checks that an adapter with
/// `SHADER_INT64` (lavapipe has it) gets this arithmetic, and that both give the CPU's words.
#[test]
fn native_kernels_make_no_emulated_product() {
    for k in KERNELS {
        let native = validate(k.name, &k.wgsl_for(Arithmetic::NativeInt64), Arithmetic::NativeInt64);
        assert!(!splits_into_halves(&native), "{}: a 16-bit split under native arithmetic", k.name);
        let emulated = validate(k.name, &k.wgsl_for(Arithmetic::Emulated), Arithmetic::Emulated);
        assert!(splits_into_halves(&emulated), "{}: the emulated build has no 16-bit split", k.name);
    }
    for arithmetic in Arithmetic::ALL {
        for (name, source) in generated_sources(&[4, 10], arithmetic) {
            let module = validate(&name, &source, arithmetic);
            assert_eq!(splits_into_halves(&module), arithmetic == Arithmetic::Emulated, "{name} ({arithmetic:?})");
        }
    }
}

#[test]
fn every_shader_file_is_used_by_a_kernel() {
    let root = shaders_dir();
    let mut files = Vec::new();
    wgsl_files(&root, &root, &mut files);
    assert!(files.len() >= 9, "only {} shader files found: {files:?}", files.len());
    let mut sources: Vec<String> = KERNELS.iter().flat_map(|k| Arithmetic::ALL.map(|a| k.wgsl_for(a))).collect();
    sources.extend(generated_sources(&[10], Arithmetic::Emulated).into_iter().map(|(_, source)| source));
    for file in &files {
        let text = fs::read_to_string(root.join(file)).unwrap();
        assert!(!text.trim().is_empty(), "shaders/{file} is empty");
        assert!(sources.iter().any(|s| s.contains(&text)), "shaders/{file} is used by no kernel");
    }
}

#[test]
fn a_broken_shader_is_caught() {
    let source = "fn f() -> u32 { return 1.5; }";
    let ok = naga::front::wgsl::parse_str(source).ok().and_then(|m| {
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::empty())
            .validate(&m)
            .ok()
    });
    assert!(ok.is_none());
    // A kernel's source without the shared arithmetic the device puts in front does not build.
    let elementwise = KERNELS.iter().find(|k| k.name == "elementwise").unwrap();
    let alone: String = elementwise.files.iter().map(|f| fs::read_to_string(shaders_dir().join(f)).unwrap()).collect();
    assert!(naga::front::wgsl::parse_str(&alone)
        .ok()
        .and_then(|m| {
            naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::empty())
                .validate(&m)
                .ok()
        })
        .is_none());
}

/// `(name, source)` of generated fused kernels of several shapes at each `log_n`, as a device
/// with `arithmetic` builds them.
fn generated_sources(log_ns: &[u32], arithmetic: Arithmetic) -> Vec<(String, String)> {
    let buf = vec![0u32; 8];
    let basis = [0usize, 1];
    let wide = [2usize, 1, 0];
    let seeded = |index| Operand::Uniform { seed: [7; 32], purpose: Purpose::CiphertextA, index };
    let stored =
        |format| Operand::Buffer { buf: &buf, basis: &wide, format, traffic: Traffic::Ciphertext, limb_offset: 0 };
    let l = Expr::load;
    let mut operands: Vec<Operand<'_, CpuBackend>> =
        vec![stored(Format::Words), stored(Format::Packed), seeded(0), Operand::Scalar(vec![1, 2]), seeded(1)];
    operands.extend((0..16).map(|_| stored(Format::Words)));
    let programs: Vec<(&str, Vec<(Expr, Format)>)> = vec![
        ("hadd", vec![(Expr::add(l(0), l(1)), Format::Words)]),
        ("seeded", vec![(Expr::add(l(2), l(0)), Format::Packed), (Expr::mul(l(2), l(3)), Format::Words)]),
        ("convert", vec![(l(1), Format::Words), (l(0), Format::Packed)]),
        ("sum16", vec![(Expr::Sum((5..21).map(|i| Expr::mul(l(3), l(i))).chain([l(0)]).collect()), Format::Words)]),
        ("galois", vec![(Expr::galois(3, Expr::add(l(2), l(1))), Format::Packed)]),
        ("nested galois", vec![(Expr::galois(5, Expr::sub(Expr::galois(3, l(4)), Expr::neg(l(2)))), Format::Words)]),
        (
            "tensor",
            vec![
                (Expr::mul(l(0), l(1)), Format::Words),
                (Expr::add(Expr::mul(l(0), l(2)), Expr::mul(l(4), l(1))), Format::Packed),
                (Expr::mul(l(2), l(4)), Format::Words),
            ],
        ),
        ("empty sum", vec![(Expr::Sum(vec![]), Format::Packed)]),
    ];
    let mut out = Vec::new();
    for (name, outputs) in programs {
        let program = Program { basis: &basis, operands: operands.iter().map(clone_operand).collect(), outputs };
        for &log_n in log_ns {
            let sources = fused_kernel_sources_for(&program, log_n, 32, arithmetic).unwrap();
            if arithmetic == Arithmetic::Emulated {
                assert_eq!(sources, fused_kernel_sources(&program, log_n, 32).unwrap());
            }
            for (key, source) in sources {
                out.push((format!("{name} (log_n {log_n}, {key})"), source));
            }
        }
    }
    out
}

#[test]
fn generated_fused_kernels_validate() {
    let root = shaders_dir();
    let shared = fs::read_to_string(root.join("shared/zq.wgsl")).unwrap();
    let chacha = fs::read_to_string(root.join("shared/chacha.wgsl")).unwrap();
    for arithmetic in Arithmetic::ALL {
        let mul = fs::read_to_string(root.join(arithmetic.file())).unwrap();
        let sources = generated_sources(&[1, 4, 10], arithmetic);
        assert!(sources.len() >= 24);
        for (name, source) in &sources {
            assert!(
                source.starts_with(&shared) && source.contains(&mul) && source.contains(&chacha),
                "{name}: not assembled like the device's"
            );
            let module = validate(name, source, arithmetic);
            assert!(module.entry_points.iter().any(|e| e.name == "main" && e.stage == naga::ShaderStage::Compute));
        }
    }
}

fn clone_operand<'a>(op: &Operand<'a, CpuBackend>) -> Operand<'a, CpuBackend> {
    match op {
        Operand::Buffer { buf, basis, format, traffic, limb_offset } => {
            Operand::Buffer { buf: *buf, basis, format: *format, traffic: *traffic, limb_offset: *limb_offset }
        }
        Operand::Uniform { seed, purpose, index } => Operand::Uniform { seed: *seed, purpose: *purpose, index: *index },
        Operand::Scalar(s) => Operand::Scalar(s.clone()),
    }
}

#[test]
fn ntt_tiles_use_the_workgroup_memory_their_names_say() {
    // `ntt_<dir>_<pass>_<values>`: a tile of <values> words, the only workgroup memory, within
    // WebGPU's guaranteed 16 KiB (the host picks a tile by this size, backend/gpu/ntt.rs).
    let mut tiles = BTreeSet::new();
    for k in KERNELS.iter().filter(|k| k.name.starts_with("ntt_")) {
        let module = validate(k.name, &k.wgsl(), Arithmetic::Emulated);
        let values: u32 = k.name.rsplit('_').next().unwrap().parse().unwrap();
        let bytes: u32 = module
            .global_variables
            .iter()
            .filter(|(_, g)| g.space == naga::AddressSpace::WorkGroup)
            .map(|(_, g)| module.types[g.ty].inner.size(module.to_ctx()))
            .sum();
        assert_eq!(bytes, 4 * values, "{}", k.name);
        assert!(bytes <= 16 * 1024, "{}", k.name);
        tiles.insert(values);
    }
    assert_eq!(tiles.into_iter().collect::<Vec<_>>(), [1024, 2048, 4096]);
}

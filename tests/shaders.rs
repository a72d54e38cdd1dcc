//! Every WGSL shader parses and validates with naga (with the shared arithmetic and ChaCha20
//! prepended, as the host does at pipeline build), and so do generated fused kernels of several
//! shapes, on any machine, GPU or not.

#![expect(clippy::panic, reason = "tests")]

use std::fs;
use std::path::Path;

use wgfhe::backend::fused::{Expr, Format, Operand, Program, Traffic};
use wgfhe::backend::gpu::fused_kernel_sources;
use wgfhe::backend::CpuBackend;
use wgfhe::math::sampling::Purpose;

fn validate(name: &str, source: &str) {
    let module = naga::front::wgsl::parse_str(source)
        .unwrap_or_else(|e| panic!("{name}: {}\n{source}", e.emit_to_string(source)));
    naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::empty())
        .validate(&module)
        .unwrap_or_else(|e| panic!("{name}: {e:?}\n{source}"));
}

#[test]
fn every_shader_validates() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders");
    let shared = format!(
        "{}\n{}",
        fs::read_to_string(root.join("shared/zq.wgsl")).unwrap(),
        fs::read_to_string(root.join("shared/chacha.wgsl")).unwrap()
    );
    let mut count = 0;
    for entry in fs::read_dir(&root).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("wgsl") {
            continue;
        }
        let source = format!("{shared}\n{}", fs::read_to_string(&path).unwrap());
        validate(&path.display().to_string(), &source);
        count += 1;
    }
    assert!(count >= 3, "only {count} shaders found");
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
}

#[test]
fn generated_fused_kernels_validate() {
    let buf = vec![0u32; 8];
    let basis = [0usize, 1];
    let wide = [2usize, 1, 0];
    let seeded = |index| Operand::Uniform { seed: [7; 32], purpose: Purpose::CiphertextA, index };
    let stored = |format| Operand::Buffer { buf: &buf, basis: &wide, format, traffic: Traffic::Ciphertext };
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
    let mut count = 0;
    for (name, outputs) in programs {
        let program = Program { basis: &basis, operands: operands.iter().map(clone_operand).collect(), outputs };
        for log_n in [1, 4, 10] {
            for (key, source) in fused_kernel_sources(&program, log_n, 32).unwrap() {
                validate(&format!("{name} (log_n {log_n}, {key})"), &source);
                count += 1;
            }
        }
    }
    assert!(count >= 24);
}

fn clone_operand<'a>(op: &Operand<'a, CpuBackend>) -> Operand<'a, CpuBackend> {
    match op {
        Operand::Buffer { buf, basis, format, traffic } => {
            Operand::Buffer { buf: *buf, basis, format: *format, traffic: *traffic }
        }
        Operand::Uniform { seed, purpose, index } => Operand::Uniform { seed: *seed, purpose: *purpose, index: *index },
        Operand::Scalar(s) => Operand::Scalar(s.clone()),
    }
}

//! Fused programs on the GPU ([`crate::backend::fused`]): a small code generator turns a
//! program's *shape* (expression trees with operands and Galois elements renumbered, operand
//! kinds and formats, output formats) into a WGSL kernel, cached by a key built from that shape,
//! so a pipeline is built once per shape and every later program of the same shape only uploads
//! its parameters. The data (buffers, seeds, scalars, primes, Galois elements) never enters the
//! source.
//!
//! Generated kernel (the shared `zq.wgsl` and `chacha.wgsl` come first):
//! * invocation `i` evaluates residues `j0 .. j0 + G` of limb `i >> log2(N / G)`, with
//!   `j0 = G (i mod N / G)`, in a loop; `G = min(32, N)` when an output is packed (so a thread
//!   writes `ceil(G bits(q) / 32)` whole words of each packed output, `bits(q)` words when
//!   `N >= 32`, and no two threads share a word), else `G = min(16, N)` when the program has a
//!   uniform operand (one ChaCha12 block per uniform operand per group of 16 residues), else
//!   `G = min(4, N)`;
//! * binding 0: the parameters, `[log_n, threads, log2(N / G), log2 G]`, the 8 key words of each
//!   uniform operand, then per output limb `[q, bits(q), mu, candidate mask of q]`
//!   followed by one word per buffer operand (its limb's word offset, or start word when
//!   packed), two per uniform operand (stream id low and high words), one per scalar operand
//!   (its value) and one per packed output (the limb's start word);
//! * bindings `1..`: one per distinct buffer operand the dispatch loads, then one per distinct
//!   Galois element (the backend's resident permutation table), then one per output.
//!
//! Loads: a plain operand reads its word, a packed one the (one or two) words that hold the
//! residue. Packed residues are **not** checked against `q` on the GPU (the CPU reference
//! refuses them with [`Error::ResidueOutOfRange`]); packed data from outside must come through
//! the wire loader, which checks it. A uniform operand loaded at the thread's own index reuses
//! its block for 16 consecutive residues; under a Galois node it is computed per residue at the
//! permuted index (block `perm[j] / 16`). Identical subexpressions at the same index are
//! evaluated once (across outputs too).
//!
//! Binding limits: the device allows `min(adapter, 32)` storage buffers per stage. A program
//! needing more is split into several dispatches, each evaluating a run of consecutive outputs
//! whose buffers, tables and outputs fit; an output that alone needs more bindings than the
//! device allows is an [`Error::AdapterLimit`].

use std::collections::{BTreeSet, HashMap};

use super::sources::Arithmetic;
use super::{GpuBackend, GpuBuffer};
use crate::backend::fused::{buffer_words, packed_layout, Expr, Format, Operand, Program};
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::math::sampling::{candidate_mask, stream_id};

/// The shared ChaCha12 block and the generator-2 acceptance.
const CHACHA_WGSL: &str = include_str!("../../../shaders/shared/chacha.wgsl");

/// Parameter words before the per-uniform keys.
const HEADER: usize = 4;
/// Per-limb words before the per-operand words: `q, k, mu, candidate mask`.
const LIMB_HEAD: usize = 4;

/// What a slot of a generated kernel holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Slot {
    /// A buffer of plain words.
    Words,
    /// A bit-packed buffer.
    Packed,
    /// A generator-2 uniform stream.
    Uniform,
    /// A per-limb constant.
    Scalar,
}

/// The shape of one dispatch: everything the WGSL source depends on, nothing else. Expressions
/// are renumbered: `Load(s)` loads slot `s`, `Galois { g: t, .. }` permutes by table `t`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Shape {
    /// `log2 G`: residues per invocation.
    log_g: u32,
    /// The operand slots, in first-use order.
    slots: Vec<Slot>,
    /// Number of Galois permutation tables.
    tables: usize,
    /// The outputs.
    outputs: Vec<(Expr, Format)>,
}

/// One dispatch of a program: its shape, and which operands, Galois elements and outputs of the
/// program fill the shape's slots.
#[derive(Debug)]
struct Plan {
    shape: Shape,
    /// Program operand of every slot.
    operands: Vec<usize>,
    /// Galois element of every table.
    galois: Vec<usize>,
    /// Program output of every shape output.
    outputs: Vec<usize>,
}

fn remap(e: &Expr, operands: &mut Vec<usize>, galois: &mut Vec<usize>) -> Expr {
    let mut rec = |a: &Expr| Box::new(remap(a, operands, galois));
    match e {
        Expr::Load(i) => Expr::Load(slot_of(operands, *i)),
        Expr::Add(a, b) => {
            let a = rec(a);
            Expr::Add(a, rec(b))
        }
        Expr::Sub(a, b) => {
            let a = rec(a);
            Expr::Sub(a, rec(b))
        }
        Expr::Mul(a, b) => {
            let a = rec(a);
            Expr::Mul(a, rec(b))
        }
        Expr::Neg(a) => Expr::Neg(rec(a)),
        Expr::Sum(terms) => Expr::Sum(terms.iter().map(|t| remap(t, operands, galois)).collect()),
        Expr::Galois { g, expr } => {
            let t = slot_of(galois, *g);
            Expr::Galois { g: t, expr: Box::new(remap(expr, operands, galois)) }
        }
    }
}

/// Position of `x` in `list`, appended when new.
fn slot_of(list: &mut Vec<usize>, x: usize) -> usize {
    match list.iter().position(|&y| y == x) {
        Some(p) => p,
        None => {
            list.push(x);
            list.len() - 1
        }
    }
}

impl Plan {
    /// The plan evaluating `outputs` (indices into the program's outputs).
    fn new<B: Backend>(program: &Program<'_, B>, outputs: &[usize], log_n: u32) -> Result<Self> {
        let mut operands = Vec::new();
        let mut galois = Vec::new();
        let mut exprs = Vec::with_capacity(outputs.len());
        for &o in outputs {
            let (e, format) = program.outputs.get(o).ok_or(Error::SizeOverflow { what: "fused outputs" })?;
            exprs.push((remap(e, &mut operands, &mut galois), *format));
        }
        let slots = operands
            .iter()
            .map(|&i| match program.operands.get(i) {
                Some(Operand::Buffer { format: Format::Words, .. }) => Ok(Slot::Words),
                Some(Operand::Buffer { format: Format::Packed, .. }) => Ok(Slot::Packed),
                Some(Operand::Uniform { .. }) => Ok(Slot::Uniform),
                Some(Operand::Scalar(_)) => Ok(Slot::Scalar),
                None => Err(Error::InvalidField {
                    field: "fused expression",
                    reason: "loads an operand that does not exist",
                }),
            })
            .collect::<Result<Vec<_>>>()?;
        let packed = exprs.iter().any(|(_, f)| *f == Format::Packed);
        // A thread owns whole ChaCha12 blocks (16 residues) when the program has a stream.
        let uniform = slots.contains(&Slot::Uniform);
        let log_g = log_n.min(if packed {
            5
        } else if uniform {
            4
        } else {
            2
        });
        Ok(Self {
            shape: Shape { log_g, slots, tables: galois.len(), outputs: exprs },
            operands,
            galois,
            outputs: outputs.to_vec(),
        })
    }
}

/// Storage bindings one dispatch of `outputs` needs: parameters, buffers, tables, outputs.
fn bindings<B: Backend>(program: &Program<'_, B>, outputs: &[usize]) -> usize {
    let mut buffers = BTreeSet::new();
    let mut galois = BTreeSet::new();
    for (e, _) in outputs.iter().filter_map(|&o| program.outputs.get(o)) {
        e.visit(&mut |node| match node {
            Expr::Load(i) if matches!(program.operands.get(*i), Some(Operand::Buffer { .. })) => {
                buffers.insert(*i);
            }
            Expr::Galois { g, .. } => {
                galois.insert(*g);
            }
            _ => {}
        });
    }
    1 + buffers.len() + galois.len() + outputs.len()
}

/// Splits the outputs into runs of consecutive outputs whose dispatch fits `max_bindings`
/// storage bindings.
fn split<B: Backend>(program: &Program<'_, B>, max_bindings: usize) -> Result<Vec<Vec<usize>>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    for o in 0..program.outputs.len() {
        let alone = bindings(program, &[o]);
        if alone > max_bindings {
            return Err(Error::AdapterLimit {
                reason: format!(
                    "fused output {o} needs {alone} storage buffers, the device allows {max_bindings} per kernel"
                ),
            });
        }
        current.push(o);
        if bindings(program, &current) > max_bindings {
            current.pop();
            groups.push(std::mem::replace(&mut current, vec![o]));
        }
    }
    if !current.is_empty() {
        groups.push(current);
    }
    Ok(groups)
}

/// Dispatches the GPU backend makes for `program` on a device with `max_bindings` storage
/// bindings per kernel (the runs of [`split`]; none for a program without limbs or outputs).
///
/// Errors: an output that needs more bindings than that alone ([`Error::AdapterLimit`]).
pub(crate) fn dispatches<B: Backend>(program: &Program<'_, B>, max_bindings: usize) -> Result<u64> {
    if program.basis.is_empty() || program.outputs.is_empty() {
        return Ok(0);
    }
    Ok(split(program, max_bindings)?.len() as u64)
}

/// Per-limb parameter words of each slot.
fn slot_words(slot: Slot) -> usize {
    match slot {
        Slot::Uniform => 2,
        Slot::Words | Slot::Packed | Slot::Scalar => 1,
    }
}

impl Shape {
    /// The shape written out (names its kernel in [`kernel_sources`]; the device's cache
    /// compares shapes, not this text).
    fn key(&self) -> String {
        format!("fused/{self:?}")
    }

    fn uniforms(&self) -> usize {
        self.slots.iter().filter(|s| **s == Slot::Uniform).count()
    }

    fn packed_outputs(&self) -> usize {
        self.outputs.iter().filter(|(_, f)| *f == Format::Packed).count()
    }

    /// Parameter words per limb.
    fn stride(&self) -> usize {
        LIMB_HEAD + self.slots.iter().map(|&s| slot_words(s)).sum::<usize>() + self.packed_outputs()
    }

    /// The kernel's own WGSL (bindings, helpers and `main`; the shared files go before it).
    fn wgsl(&self) -> String {
        let mut src = String::from("// Generated fused kernel (backend/gpu/fused.rs).\n");
        src.push_str("@group(0) @binding(0) var<storage, read> params: array<u32>;\n");
        let mut binding = 1usize;
        let mut buffer_binding = vec![None; self.slots.len()];
        for (s, slot) in self.slots.iter().enumerate() {
            if matches!(slot, Slot::Words | Slot::Packed) {
                src.push_str(&format!("@group(0) @binding({binding}) var<storage, read> b{s}: array<u32>;\n"));
                if let Some(b) = buffer_binding.get_mut(s) {
                    *b = Some(binding);
                }
                binding += 1;
            }
        }
        for t in 0..self.tables {
            src.push_str(&format!("@group(0) @binding({binding}) var<storage, read> perm{t}: array<u32>;\n"));
            binding += 1;
        }
        for o in 0..self.outputs.len() {
            src.push_str(&format!("@group(0) @binding({binding}) var<storage, read_write> out{o}: array<u32>;\n"));
            binding += 1;
        }
        for (s, slot) in self.slots.iter().enumerate() {
            if *slot == Slot::Packed {
                src.push_str(&format!(
                    "\n// Residue j of a packed limb of b{s} starting at word start (k bits a residue).\n\
                     fn unpack{s}(start: u32, k: u32, j: u32) -> u32 {{\n    \
                     let pos = j * k;\n    let w = start + (pos >> 5u);\n    let sh = pos & 31u;\n    \
                     var v = b{s}[w] >> sh;\n    \
                     if (sh + k > 32u) {{ v = v | (b{s}[w + 1u] << (32u - sh)); }}\n    \
                     if (k < 32u) {{ v = v & ((1u << k) - 1u); }}\n    return v;\n}}\n"
                ));
            }
        }

        let g = 1u32 << self.log_g;
        let stride = self.stride();
        src.push_str(&format!(
            "\n@compute @workgroup_size(256)\n\
             fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{\n    \
             let i = linear_id(gid, nwg);\n    if (i >= params[1]) {{ return; }}\n    \
             let log_n = params[0];\n    let log_gpl = params[2];\n    \
             let limb = i >> log_gpl;\n    let grp = i & ((1u << log_gpl) - 1u);\n    \
             let j0 = grp << {log_g}u;\n    let lb = {HEADER}u + {uni}u * 8u + limb * {stride}u;\n    \
             let q = params[lb];\n    let k = params[lb + 1u];\n    let mu = params[lb + 2u];\n    \
             let mask = params[lb + 3u];\n",
            log_g = self.log_g,
            uni = self.uniforms(),
        ));
        // Which uniform slots are loaded at the thread's own index (they cache their block).
        let mut gen = Gen::default();
        let stream_loop = StreamLoop::find(self);
        if let Some(l) = &stream_loop {
            gen.looped = Some((l.terms.clone(), "lsum[t]"));
        }
        let mut body = String::new();
        let mut results = Vec::with_capacity(self.outputs.len());
        for (e, _) in &self.outputs {
            results.push(gen.expr(e, "j", self, &mut body));
        }
        let mut off = LIMB_HEAD;
        let mut uniform = 0usize;
        for (s, slot) in self.slots.iter().enumerate() {
            if !gen.used.contains(&s) {
                // Only the stream loop reads it, from the parameters directly.
                off += slot_words(*slot);
                uniform += usize::from(*slot == Slot::Uniform);
                continue;
            }
            match slot {
                Slot::Words | Slot::Packed => src.push_str(&format!("    let off{s} = params[lb + {off}u];\n")),
                Slot::Scalar => src.push_str(&format!("    let c{s} = params[lb + {off}u];\n")),
                Slot::Uniform => {
                    let key = HEADER + 8 * uniform;
                    uniform += 1;
                    src.push_str(&format!(
                        "    let slo{s} = params[lb + {off}u];\n    let shi{s} = params[lb + {}u];\n    \
                         var key{s}: array<u32, 8>;\n    \
                         for (var w = 0u; w < 8u; w = w + 1u) {{ key{s}[w] = params[{key}u + w]; }}\n",
                        off + 1
                    ));
                    if gen.block_cached.contains(&s) {
                        src.push_str(&format!("    var ub{s}: ChaBlock;\n"));
                    }
                }
            }
            off += slot_words(*slot);
        }
        let mut packed = 0usize;
        for (o, (_, format)) in self.outputs.iter().enumerate() {
            if *format == Format::Packed {
                src.push_str(&format!(
                    "    let po{o} = params[lb + {}u];\n    var pk{o}: array<u32, 32>;\n",
                    off + packed
                ));
                packed += 1;
            }
        }
        if let Some(l) = &stream_loop {
            src.push_str(&l.wgsl());
        }
        src.push_str(&format!("    for (var t = 0u; t < {g}u; t = t + 1u) {{\n        let j = j0 + t;\n"));
        if !gen.block_cached.is_empty() {
            src.push_str("        if ((t & 15u) == 0u) {\n");
            for s in &gen.block_cached {
                src.push_str(&format!(
                    "            ub{s} = uniform_block16(key{s}, slo{s}, shi{s}, j >> 4u, q, mask);\n"
                ));
            }
            src.push_str("        }\n        let uo = j & 15u;\n");
        }
        src.push_str(&body);
        for (o, ((_, format), v)) in self.outputs.iter().zip(&results).enumerate() {
            match format {
                Format::Words => src.push_str(&format!("        out{o}[(limb << log_n) + j] = {v};\n")),
                Format::Packed => src.push_str(&format!(
                    "        {{\n            let pos = t * k;\n            let w = pos >> 5u;\n            \
                     let sh = pos & 31u;\n            pk{o}[w] = pk{o}[w] | ({v} << sh);\n            \
                     if (sh + k > 32u) {{ pk{o}[w + 1u] = pk{o}[w + 1u] | ({v} >> (32u - sh)); }}\n        }}\n"
                )),
            }
        }
        src.push_str("    }\n");
        if packed > 0 {
            src.push_str(&format!("    let pw = ({g}u * k + 31u) >> 5u;\n    let pfirst = (grp * {g}u * k) >> 5u;\n"));
            for (o, (_, format)) in self.outputs.iter().enumerate() {
                if *format == Format::Packed {
                    src.push_str(&format!(
                        "    for (var w = 0u; w < pw; w = w + 1u) {{ out{o}[po{o} + pfirst + w] = pk{o}[w]; }}\n"
                    ));
                }
            }
        }
        src.push_str("}\n");
        src
    }
}

/// A run of `scalar x uniform` terms of one sum, computed by a loop over the streams
/// instead of one inlined ChaCha12 block per stream: the kernel's code no longer grows with the
/// number of streams (16 inlined blocks took seconds to compile on some drivers). The terms'
/// parameters must lie at a constant stride (they do for the weighted sums of seeded halves,
/// which alternate scalar and stream slots), and each invocation must own whole blocks (16
/// residues per invocation). Modular addition is exact, so summing these terms first gives the
/// same words as summing in the expression's order.
struct StreamLoop {
    /// The terms (by address) the loop computes.
    terms: Vec<*const Expr>,
    /// Per-limb word offset of the first term's scalar, and of its stream's `slo` from it.
    scalar_off: usize,
    stream_from_scalar: isize,
    /// Per-limb words between successive terms' parameters.
    stride: usize,
    /// Index (among the uniform slots) of the first term's stream.
    first_key: usize,
}

impl StreamLoop {
    /// The loop for the first sum (outside Galois permutations) with at least two such terms,
    /// if the layout allows.
    fn find(shape: &Shape) -> Option<Self> {
        if shape.log_g != 4 {
            return None;
        }
        let mut off = Vec::with_capacity(shape.slots.len());
        let mut key = Vec::with_capacity(shape.slots.len());
        let (mut o, mut u) = (LIMB_HEAD, 0usize);
        for &slot in &shape.slots {
            off.push(o);
            key.push(u);
            o += slot_words(slot);
            u += usize::from(slot == Slot::Uniform);
        }
        let slot = |e: &Expr| match e {
            Expr::Load(s) => shape.slots.get(*s).map(|k| (*s, *k)),
            _ => None,
        };
        // Every sum evaluated at the thread's own index: outside any Galois permutation.
        fn sums<'e>(e: &'e Expr, out: &mut Vec<&'e Vec<Expr>>) {
            match e {
                Expr::Sum(terms) => {
                    out.push(terms);
                    terms.iter().for_each(|t| sums(t, out));
                }
                Expr::Add(a, b) | Expr::Sub(a, b) | Expr::Mul(a, b) => {
                    sums(a, out);
                    sums(b, out);
                }
                Expr::Neg(a) => sums(a, out),
                Expr::Load(_) | Expr::Galois { .. } => {}
            }
        }
        let mut candidates = Vec::new();
        for (e, _) in &shape.outputs {
            sums(e, &mut candidates);
        }
        for terms in candidates {
            // (term, scalar slot, stream slot)
            let run: Vec<(*const Expr, usize, usize)> = terms
                .iter()
                .filter_map(|t| {
                    let Expr::Mul(a, b) = t else { return None };
                    match (slot(a)?, slot(b)?) {
                        ((c, Slot::Scalar), (u, Slot::Uniform)) | ((u, Slot::Uniform), (c, Slot::Scalar)) => {
                            Some((std::ptr::from_ref(t), c, u))
                        }
                        _ => None,
                    }
                })
                .collect();
            let [(_, c0, u0), (_, c1, _), ..] = run.as_slice() else { continue };
            let (scalar_off, stride) = (*off.get(*c0)?, off.get(*c1)?.checked_sub(*off.get(*c0)?)?);
            let stream_from_scalar = *off.get(*u0)? as isize - scalar_off as isize;
            let first_key = *key.get(*u0)?;
            let regular = run.iter().enumerate().all(|(m, &(_, c, u))| {
                off.get(c) == Some(&(scalar_off + m * stride))
                    && off.get(u).map(|&x| x as isize) == Some((scalar_off + m * stride) as isize + stream_from_scalar)
                    && key.get(u) == Some(&(first_key + m))
            });
            // Each stream in the run once (a repeated one would be summed twice correctly, but the
            // layout check above already rules it out).
            if regular && stride > 0 {
                return Some(Self {
                    terms: run.iter().map(|r| r.0).collect(),
                    scalar_off,
                    stream_from_scalar,
                    stride,
                    first_key,
                });
            }
        }
        None
    }

    /// The loop, before the residue loop: `lsum[t]` is the run's sum at residue `j0 + t`.
    fn wgsl(&self) -> String {
        let c = self.scalar_off;
        let slo = c as isize + self.stream_from_scalar;
        format!(
            "    var lsum: array<u32, 16>;\n    \
             for (var m = 0u; m < {n}u; m = m + 1u) {{\n        \
             let lp = lb + m * {stride}u;\n        \
             let lc = params[lp + {c}u];\n        \
             var lkey: array<u32, 8>;\n        \
             for (var w = 0u; w < 8u; w = w + 1u) {{ lkey[w] = params[{HEADER}u + (m + {key}u) * 8u + w]; }}\n        \
             let lslo = params[lp + {slo}u];\n        let lshi = params[lp + {shi}u];\n        \
             let lblk = uniform_block16(lkey, lslo, lshi, j0 >> 4u, q, mask);\n        \
             for (var t = 0u; t < 16u; t = t + 1u) {{\n            \
             let lu = chacha_word(lblk, t);\n            \
             lsum[t] = mod_add(lsum[t], mod_mul(lc, lu, q, k, mu), q);\n        \
             }}\n    }}\n",
            n = self.terms.len(),
            stride = self.stride,
            key = self.first_key,
            shi = slo + 1,
        )
    }
}

/// Straight-line code for the loop body: one `let` per distinct (subexpression, index).
#[derive(Default)]
struct Gen<'e> {
    /// Value names of evaluated (index variable, subexpression) pairs.
    memo: HashMap<(String, &'e Expr), String>,
    /// Index variable of (table, index variable) permutations.
    perms: HashMap<(usize, String), String>,
    /// Uniform slots loaded at the thread's own index `j`.
    block_cached: BTreeSet<usize>,
    /// Slots any emitted expression loads.
    used: BTreeSet<usize>,
    /// The terms of a sum that [`StreamLoop`] computes (by address), with the loop's value.
    looped: Option<(Vec<*const Expr>, &'static str)>,
    next: usize,
}

impl<'e> Gen<'e> {
    fn fresh(&mut self, prefix: &str) -> String {
        self.next += 1;
        format!("{prefix}{}", self.next)
    }

    /// Emits `e` evaluated at index variable `idx` into `body`; returns the value's name.
    fn expr(&mut self, e: &'e Expr, idx: &str, shape: &Shape, body: &mut String) -> String {
        let memo_key = (idx.to_owned(), e);
        if let Some(v) = self.memo.get(&memo_key) {
            return v.clone();
        }
        let value = match e {
            Expr::Load(s) => {
                let s = *s;
                self.used.insert(s);
                match shape.slots.get(s) {
                    Some(Slot::Words) => format!("b{s}[off{s} + {idx}]"),
                    Some(Slot::Packed) => format!("unpack{s}(off{s}, k, {idx})"),
                    Some(Slot::Scalar) => format!("c{s}"),
                    Some(Slot::Uniform) if idx == "j" => {
                        self.block_cached.insert(s);
                        format!("chacha_word(ub{s}, uo)")
                    }
                    Some(Slot::Uniform) => {
                        format!("uniform_residue(key{s}, slo{s}, shi{s}, {idx}, q, mask)")
                    }
                    // Unreachable: every slot comes from a load.
                    None => "0u".to_owned(),
                }
            }
            Expr::Add(a, b) => {
                let (a, b) = (self.expr(a, idx, shape, body), self.expr(b, idx, shape, body));
                format!("mod_add({a}, {b}, q)")
            }
            Expr::Sub(a, b) => {
                let (a, b) = (self.expr(a, idx, shape, body), self.expr(b, idx, shape, body));
                format!("mod_sub({a}, {b}, q)")
            }
            Expr::Mul(a, b) => {
                let (a, b) = (self.expr(a, idx, shape, body), self.expr(b, idx, shape, body));
                format!("mod_mul({a}, {b}, q, k, mu)")
            }
            Expr::Neg(a) => {
                let a = self.expr(a, idx, shape, body);
                format!("mod_neg({a}, q)")
            }
            Expr::Sum(terms) => {
                let mut acc: Option<String> = None;
                let mut looped_in = false;
                for term in terms {
                    let in_loop =
                        idx == "j" && self.looped.as_ref().is_some_and(|(l, _)| l.contains(&std::ptr::from_ref(term)));
                    if in_loop && looped_in {
                        continue;
                    }
                    let v = match (&self.looped, in_loop) {
                        (Some((_, value)), true) => {
                            looped_in = true;
                            (*value).to_owned()
                        }
                        _ => self.expr(term, idx, shape, body),
                    };
                    acc = Some(match acc {
                        None => v,
                        Some(a) => {
                            let name = self.fresh("v");
                            body.push_str(&format!("        let {name} = mod_add({a}, {v}, q);\n"));
                            name
                        }
                    });
                }
                acc.unwrap_or_else(|| "0u".to_owned())
            }
            Expr::Galois { g: t, expr } => {
                let perm_key = (*t, idx.to_owned());
                let inner_idx = match self.perms.get(&perm_key) {
                    Some(v) => v.clone(),
                    None => {
                        let name = self.fresh("p");
                        body.push_str(&format!("        let {name} = perm{t}[{idx}];\n"));
                        self.perms.insert(perm_key, name.clone());
                        name
                    }
                };
                self.expr(expr, &inner_idx, shape, body)
            }
        };
        let name = self.fresh("v");
        body.push_str(&format!("        let {name} = {value};\n"));
        self.memo.insert(memo_key, name.clone());
        name
    }
}

/// The complete WGSL sources (shared arithmetic and ChaCha12 included) of the dispatches that
/// would evaluate `program` on an `n = 2^log_n` ring with `max_bindings` storage buffers per
/// kernel, with their pipeline-cache keys, as a device without native 64-bit integers builds
/// them ([`kernel_sources_for`] with [`Arithmetic::Emulated`]). For validation and inspection:
/// no device is needed, and the program is not validated (its buffers are not looked at).
pub fn kernel_sources<B: Backend>(
    program: &Program<'_, B>,
    log_n: u32,
    max_bindings: usize,
) -> Result<Vec<(String, String)>> {
    kernel_sources_for(program, log_n, max_bindings, Arithmetic::Emulated)
}

/// [`kernel_sources`] as a device with `arithmetic` builds them.
pub fn kernel_sources_for<B: Backend>(
    program: &Program<'_, B>,
    log_n: u32,
    max_bindings: usize,
    arithmetic: Arithmetic,
) -> Result<Vec<(String, String)>> {
    split(program, max_bindings)?
        .iter()
        .map(|outs| {
            let plan = Plan::new(program, outs, log_n)?;
            Ok((plan.shape.key(), super::sources::assemble(&own_source(&plan.shape), arithmetic)))
        })
        .collect()
}

/// A generated kernel's own source (the shared ChaCha12, then the shape's code); the device puts
/// the shared arithmetic in front of it ([`super::sources::assemble`]).
fn own_source(shape: &Shape) -> String {
    format!("{CHACHA_WGSL}\n{}", shape.wgsl())
}

fn word(x: usize, what: &'static str) -> Result<u32> {
    u32::try_from(x).map_err(|_| Error::SizeOverflow { what })
}

/// `GpuBackend::fused`: validates, then runs one dispatch per run of outputs that fits the
/// binding limit (one in all for any program within it).
pub(super) fn fused(be: &GpuBackend, program: &Program<'_, GpuBackend>) -> Result<Vec<GpuBuffer>> {
    program.validate(be)?;
    let ctx = &be.ctx;
    let n = ctx.n();
    let log_n = be.log_n();
    let moduli = ctx.moduli_of(program.basis)?;
    let mut outs = Vec::with_capacity(program.outputs.len());
    // Every word of every output is written by the dispatch of its run (packed limbs have no
    // padding: a thread writes whole words), so the outputs need no clear.
    for (_, format) in &program.outputs {
        outs.push(be.output(buffer_words(ctx, program.basis, *format)?)?);
    }
    if program.basis.is_empty() || program.outputs.is_empty() {
        return Ok(outs);
    }
    let (out_layout, _) = packed_layout(ctx, program.basis)?;
    let max_bindings = be.dev.max_storage_buffers() as usize;
    for group in split(program, max_bindings)? {
        let plan = Plan::new(program, &group, log_n)?;
        let shape = &plan.shape;
        let groups_per_limb = n >> shape.log_g;
        let threads = word(program.basis.len() * groups_per_limb, "fused invocations")?;

        let mut params = Vec::with_capacity(HEADER + 8 * shape.uniforms() + program.basis.len() * shape.stride());
        params.extend_from_slice(&[log_n, threads, log_n - shape.log_g, shape.log_g]);
        // Per slot: the operand, and for packed buffers its layout.
        let mut layouts = Vec::with_capacity(plan.operands.len());
        for &i in &plan.operands {
            let op = program.operands.get(i).ok_or(Error::SizeOverflow { what: "fused operands" })?;
            match op {
                Operand::Uniform { seed, .. } => params.extend(super::rns_kernels::key_words(seed)),
                Operand::Buffer { basis, format: Format::Packed, .. } => {
                    layouts.push(Some(packed_layout(ctx, basis)?.0));
                    continue;
                }
                Operand::Buffer { .. } | Operand::Scalar(_) => {}
            }
            layouts.push(None);
        }
        for (l, (&prime, m)) in program.basis.iter().zip(&moduli).enumerate() {
            params.extend_from_slice(&[m.value(), m.bits(), m.barrett_mu(), candidate_mask(m.value())]);
            for (&i, layout) in plan.operands.iter().zip(&layouts) {
                let op = program.operands.get(i).ok_or(Error::SizeOverflow { what: "fused operands" })?;
                match op {
                    Operand::Buffer { basis, limb_offset, .. } => {
                        let pos = basis.iter().position(|&b| b == prime).ok_or(Error::DimensionMismatch {
                            what: "fused operand basis",
                            expected: program.basis.len(),
                            found: basis.len(),
                        })?;
                        let start = match layout {
                            Some(layout) => layout
                                .get(pos)
                                .map(|&(start, _)| start)
                                .ok_or(Error::SizeOverflow { what: "packed layout" })?,
                            None => (limb_offset + pos) * n,
                        };
                        params.push(word(start, "fused operand offset")?);
                    }
                    Operand::Uniform { purpose, index, .. } => {
                        let id = stream_id(*purpose, *index, m.value())?;
                        params.extend_from_slice(&[id as u32, (id >> 32) as u32]);
                    }
                    Operand::Scalar(s) => {
                        params.push(*s.get(l).ok_or(Error::DimensionMismatch {
                            what: "fused scalars",
                            expected: program.basis.len(),
                            found: s.len(),
                        })?);
                    }
                }
            }
            for &o in &plan.outputs {
                if let Some((_, Format::Packed)) = program.outputs.get(o) {
                    let &(start, _) = out_layout.get(l).ok_or(Error::SizeOverflow { what: "packed layout" })?;
                    params.push(word(start, "fused output offset")?);
                }
            }
        }

        let tables = plan
            .galois
            .iter()
            .map(|&g| be.table("galois permutation", &[g], || Ok(ctx.galois_permutation(g)?.to_vec())))
            .collect::<Result<Vec<_>>>()?;
        let mut buffers: Vec<&wgpu::Buffer> = Vec::with_capacity(max_bindings);
        for &i in &plan.operands {
            if let Some(Operand::Buffer { buf, .. }) = program.operands.get(i) {
                buffers.push(&buf.buf);
            }
        }
        buffers.extend(tables.iter().map(|t| &**t));
        for &o in &plan.outputs {
            buffers.push(&outs.get(o).ok_or(Error::SizeOverflow { what: "fused outputs" })?.buf);
        }
        be.dev.dispatch_generated(
            shape,
            "fused",
            || own_source(shape),
            "main",
            &params,
            &buffers,
            u64::from(threads),
        )?;
    }
    Ok(outs)
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::backend::CpuBackend;

    fn program<'a>(bufs: &'a [Vec<u32>], basis: &'a [usize], outputs: Vec<(Expr, Format)>) -> Program<'a, CpuBackend> {
        Program {
            basis,
            operands: bufs
                .iter()
                .map(|b| Operand::words(b, basis))
                .chain([
                    Operand::Scalar(vec![1; basis.len()]),
                    Operand::Uniform { seed: [3; 32], purpose: crate::math::sampling::Purpose::CiphertextA, index: 0 },
                ])
                .collect(),
            outputs,
        }
    }

    #[test]
    fn shape_key_ignores_data_and_unused_operands() {
        let bufs = vec![vec![0u32; 8]; 4];
        let basis = [0usize, 1];
        let a = program(&bufs[..2], &basis, vec![(Expr::add(Expr::load(0), Expr::load(1)), Format::Words)]);
        let b = program(&bufs, &basis, vec![(Expr::add(Expr::load(2), Expr::load(3)), Format::Words)]);
        let ka = kernel_sources(&a, 10, 32).unwrap();
        let kb = kernel_sources(&b, 10, 32).unwrap();
        assert_eq!(ka, kb);
        let c = program(&bufs, &basis, vec![(Expr::add(Expr::load(2), Expr::load(3)), Format::Packed)]);
        assert_ne!(kernel_sources(&c, 10, 32).unwrap()[0].0, ka[0].0);
    }

    /// The kernel of a sum of `terms` `scalar x uniform` products (factors in the order
    /// `uniform_first` says) plus a stored operand.
    fn weighted_streams(terms: usize, uniform_first: bool) -> String {
        let bufs = [vec![0u32; 8]];
        let basis = [0usize];
        let mut operands = vec![Operand::words(&bufs[0], &basis[..])];
        let mut sum = vec![Expr::load(0)];
        for m in 0..terms {
            operands.push(Operand::Scalar(vec![1]));
            operands.push(Operand::Uniform {
                seed: [3; 32],
                purpose: crate::math::sampling::Purpose::CiphertextA,
                index: m as u32,
            });
            let (c, u) = (Expr::load(1 + 2 * m), Expr::load(2 + 2 * m));
            sum.push(if uniform_first { Expr::mul(u, c) } else { Expr::mul(c, u) });
        }
        let p: Program<'_, CpuBackend> =
            Program { basis: &basis, operands, outputs: vec![(Expr::Sum(sum), Format::Words)] };
        let mut k = kernel_sources(&p, 10, 32).unwrap();
        k.pop().unwrap().1
    }

    #[test]
    fn weighted_streams_loop_instead_of_inlining_a_block_each() {
        for uniform_first in [false, true] {
            let src = weighted_streams(16, uniform_first);
            // The kernel's own code (after the shared files) calls the block function once, in
            // the loop.
            let own = src.split("// Generated fused kernel").nth(1).unwrap();
            assert_eq!(own.matches("uniform_block16(").count(), 1, "{own}");
            assert!(own.contains("uniform_block16(lkey"), "{own}");
            assert!(src.contains("m < 16u"), "{src}");
            // The code does not grow with the number of streams.
            let longer = weighted_streams(8, uniform_first);
            assert!(src.len() < longer.len() + 200, "{} vs {}", src.len(), longer.len());
        }
        // A single term is left inline.
        assert!(!weighted_streams(1, false).contains("lsum"));
        // A sum inside an expression (here `stored + sum`) loops too.
        assert!(weighted_streams(16, false).contains("lsum"));
    }

    #[test]
    fn outputs_split_by_binding_limit() {
        let bufs = vec![vec![0u32; 8]; 6];
        let basis = [0usize];
        // Each output loads two buffers: 1 + 2 + 1 = 4 bindings alone.
        let outputs: Vec<_> =
            (0..3).map(|o| (Expr::add(Expr::load(2 * o), Expr::load(2 * o + 1)), Format::Words)).collect();
        let p = program(&bufs, &basis, outputs);
        assert_eq!(split(&p, 10).unwrap(), vec![vec![0, 1, 2]]);
        assert_eq!(split(&p, 9).unwrap(), vec![vec![0, 1], vec![2]]);
        assert_eq!(split(&p, 7).unwrap(), vec![vec![0, 1], vec![2]]);
        assert_eq!(split(&p, 6).unwrap(), vec![vec![0], vec![1], vec![2]]);
        assert_eq!(kernel_sources(&p, 10, 6).unwrap().len(), 3);
        assert!(matches!(split(&p, 3), Err(Error::AdapterLimit { .. })));
    }
}

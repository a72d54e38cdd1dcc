//! Exact non-linear functions on BGV ciphertexts: range-restricted lookup tables, word-wise
//! comparison of digit vectors with pruning, and digit extraction feeding it.
//!
//! After a linear layer with plaintext weights the server knows an exact bound `|x| <= B` on
//! every slot. Any integer function `f` on `[-B', B']` (`B' >= B`) is then the Lagrange
//! interpolant over `F_t` of degree `<= 2B'`, evaluated on the ciphertext: ReLU, ReLU fused with
//! requantisation, the sign and comparisons with a constant all cost the same. An input outside
//! the domain gives garbage, so bounds are worst-case ([`lut::Bounded`]) and a bound
//! `>= (t-1)/2` is refused.
//!
//! * [`lut`]: [`lut::Lut`] (compiled tables and the built-in ones), [`lut::Bounded`] (ciphertexts
//!   with exact bounds and the linear operations that propagate them) and [`lut::eval_lut`].
//! * [`poly_eval`]: Paterson–Stockmeyer evaluation, its cost formula and the planner.
//! * [`digits`]: integers as digit vectors (floor/offset and balanced conventions), pruning and
//!   its plaintext reference.
//! * [`wordwise`]: encrypted word-wise EQ, LT and MAX (Iliashenko-Zucca) with digit pruning.
//! * [`extract`]: homomorphic digit extraction of bounded values (one [`lut::LutSet`] of digit
//!   tables), and the pipeline to pruned sign tests, comparisons and ReLU.

pub mod digits;
pub mod extract;
pub mod lut;
pub mod poly_eval;
pub mod wordwise;

pub use lut::{
    eval_lut, eval_lut_bounded, eval_lut_set, eval_lut_set_measured, eval_lut_set_with_plan, eval_lut_with_plan,
    Bounded, Lut, LutSet, Parity,
};
pub use poly_eval::{EvalPlan, EvalStats, Objective, Strategy};

//! The stages of the CNN circuit as a checkpoint records them: their names and the value the
//! stage loop of [`CnnCircuit::evaluate_checkpointed`] holds after each.

use super::*;

/// The names of the stages a checkpoint of a CNN with `channels` conv channels records, in
/// order: [`STAGES`] with, after `conv`, one `relu1.<c>` per channel of the first ReLU but the
/// last (`c` channels done; the last one completes `relu1`), so that a stopped run loses at
/// most one channel's tables.
#[must_use]
pub fn checkpoint_stages(channels: usize) -> Vec<String> {
    let mut out = vec![STAGES[0].to_owned()];
    out.extend((1..channels).map(|c| format!("relu1.{c}")));
    out.extend(STAGES[1..].iter().map(|s| (*s).to_owned()));
    out
}

/// The stages of the CNN circuit, in order: what a checkpoint records after each.
pub const STAGES: [&str; 5] = ["conv", "relu1", "fc1", "relu2", "fc2"];

/// Where the stage loop of [`CnnCircuit::evaluate_checkpointed`] stands: the output of the
/// last completed stage.
pub(super) enum Stage<B: Backend> {
    /// Nothing computed yet.
    Inputs,
    /// One materialised ciphertext per channel.
    Conv(Vec<Ciphertext<B>>),
    /// The first ReLU part done: the activations of the first channels and the conv outputs
    /// of the others (both non-empty).
    Relu1Part {
        /// Activations, in channel order.
        done: Vec<Ciphertext<B>>,
        /// Conv outputs still to activate, in channel order.
        rest: Vec<Ciphertext<B>>,
    },
    /// One activation per channel.
    Relu1(Vec<Ciphertext<B>>),
    /// The FC100 pre-activation (bias added).
    Fc1(Ciphertext<B>),
    /// The second activation.
    Relu2(Ciphertext<B>),
    /// The scores.
    Fc2(Ciphertext<B>),
}

impl<B: Backend> Stage<B> {
    /// Index in [`checkpoint_stages`] of a CNN with `channels` channels (`None` for the
    /// inputs).
    pub(super) fn index(&self, channels: usize) -> Option<usize> {
        let c = channels.max(1);
        match self {
            Self::Inputs => None,
            Self::Conv(_) => Some(0),
            Self::Relu1Part { done, .. } => Some(done.len()),
            Self::Relu1(_) => Some(c),
            Self::Fc1(_) => Some(c + 1),
            Self::Relu2(_) => Some(c + 2),
            Self::Fc2(_) => Some(c + 3),
        }
    }

    /// The stage's name in [`STAGES`] (`None` for the inputs and a part of the first ReLU).
    pub(super) fn name(&self) -> Option<&'static str> {
        match self {
            Self::Inputs | Self::Relu1Part { .. } => None,
            Self::Conv(_) => Some(STAGES[0]),
            Self::Relu1(_) => Some(STAGES[1]),
            Self::Fc1(_) => Some(STAGES[2]),
            Self::Relu2(_) => Some(STAGES[3]),
            Self::Fc2(_) => Some(STAGES[4]),
        }
    }

    /// The ciphertexts a checkpoint records (a part of the first ReLU: the activations done,
    /// then the conv outputs still to do).
    pub(super) fn ciphertexts(&self) -> Vec<&Ciphertext<B>> {
        match self {
            Self::Inputs => Vec::new(),
            Self::Conv(v) | Self::Relu1(v) => v.iter().collect(),
            Self::Relu1Part { done, rest } => done.iter().chain(rest).collect(),
            Self::Fc1(c) | Self::Relu2(c) | Self::Fc2(c) => vec![c],
        }
    }

    /// The stage's name and first ciphertext (for the noise record; `None` for a part of the
    /// first ReLU).
    pub(super) fn first(&self) -> Option<(&'static str, &Ciphertext<B>)> {
        Some((self.name()?, *self.ciphertexts().first()?))
    }

    /// The stage `index` of [`checkpoint_stages`]`(channels)` from its loaded ciphertexts
    /// (`channels` up to `relu1`, one after).
    pub(super) fn restore(index: usize, mut cts: Vec<Ciphertext<B>>, channels: usize) -> Result<Self> {
        let c = channels.max(1);
        let expected = if index <= c { channels } else { 1 };
        if cts.len() != expected {
            return Err(Error::DimensionMismatch {
                what: "checkpointed stage ciphertexts",
                expected,
                found: cts.len(),
            });
        }
        let one = |cts: &mut Vec<Ciphertext<B>>| {
            cts.pop().ok_or(Error::DimensionMismatch { what: "checkpointed stage ciphertexts", expected: 1, found: 0 })
        };
        Ok(match index {
            0 => Self::Conv(cts),
            i if i < c => {
                let rest = cts.split_off(i);
                Self::Relu1Part { done: cts, rest }
            }
            i if i == c => Self::Relu1(cts),
            i if i == c + 1 => Self::Fc1(one(&mut cts)?),
            i if i == c + 2 => Self::Relu2(one(&mut cts)?),
            i if i == c + 3 => Self::Fc2(one(&mut cts)?),
            _ => return Err(Error::InvalidField { field: "checkpoint", reason: "unknown CNN stage" }),
        })
    }
}

//! [`KeyRequest`]: which evaluation keys a BGV or CKKS instance generates.

/// The evaluation keys to generate: the relinearisation key always, a Galois key for each
/// slot rotation in `rotations`, and optionally the key of the automorphism `X -> X^(2N-1)`.
/// That automorphism swaps the two rows of BGV's slot matrix and conjugates CKKS's complex
/// slots: [`KeyRequest::with_row_swap`] and [`KeyRequest::with_conjugation`] name the same
/// key in each scheme's words.
///
/// ```
/// use wgfhe::rlwe::KeyRequest;
///
/// let request = KeyRequest::rotations(&[1, -3]).with_row_swap();
/// assert_eq!(request.rotation_steps(), &[1, -3]);
/// assert!(request.includes_swap());
/// assert!(!KeyRequest::relinearisation().includes_swap());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyRequest {
    rotations: Vec<i64>,
    swap: bool,
}

impl KeyRequest {
    /// Only the relinearisation key.
    #[must_use]
    pub fn relinearisation() -> Self {
        Self::default()
    }

    /// The relinearisation key and the rotation keys by each of `steps` (left rotations;
    /// negative: right). Duplicates are kept as given: the key set holds one key per Galois
    /// element.
    #[must_use]
    pub fn rotations(steps: &[i64]) -> Self {
        Self { rotations: steps.to_vec(), swap: false }
    }

    /// Also the key of `X -> X^(2N-1)`, BGV's row swap.
    #[must_use]
    pub fn with_row_swap(self) -> Self {
        Self { swap: true, ..self }
    }

    /// Also the key of `X -> X^(2N-1)`, CKKS's conjugation (the same key as
    /// [`KeyRequest::with_row_swap`]).
    #[must_use]
    pub fn with_conjugation(self) -> Self {
        self.with_row_swap()
    }

    /// [`KeyRequest::with_row_swap`] when `swap` holds (for a flag read from a command line or
    /// a configuration), `self` unchanged otherwise.
    #[must_use]
    pub fn with_swap_if(self, swap: bool) -> Self {
        Self { swap: self.swap || swap, ..self }
    }

    /// The rotation steps requested.
    #[must_use]
    pub fn rotation_steps(&self) -> &[i64] {
        &self.rotations
    }

    /// Whether the key of `X -> X^(2N-1)` (row swap, conjugation) is requested.
    #[must_use]
    pub fn includes_swap(&self) -> bool {
        self.swap
    }
}

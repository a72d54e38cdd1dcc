//! The `wgfhe` command-line tool: the command line and its dispatch. Each subcommand lives in
//! its own module.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod bench;
mod check;
mod cnn;
mod demo;
mod env;
mod info;
mod mnist;
mod models;
mod output;
mod params;
mod serve;
mod soak;
mod verify;

/// wgfhe: GPU-accelerated fully homomorphic encryption (BGV and CKKS) over u32 RNS residues.
#[derive(Debug, Parser)]
#[command(name = "wgfhe", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List the shipped parameter sets (128-bit security, 2024 guidelines).
    Params {
        /// Print a JSON array instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Run an encrypted BGV computation end to end and check it against the clear result.
    Demo {
        /// Shipped parameter set to use.
        #[arg(long, default_value = "bgv-n13")]
        params: String,
    },
    /// Describe the build and the GPU adapter.
    Info {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Encrypted MNIST inference (the main job): fetches the data if absent, trains the model,
    /// encrypts the test images, evaluates the model under encryption and checks every
    /// prediction against the quantised plaintext model.
    Mnist(mnist::MnistArgs),
    /// Benchmark suites (the backend comes from WGFHE_BACKEND: auto, gpu or cpu).
    Bench(bench::BenchArgs),
    /// Run every kernel and scheme operation on CPU and GPU with seeded random inputs and
    /// compare the results word for word (exit code 1 if any differs).
    Verify(verify::VerifyArgs),
    /// Soak test: many cycles of HMULT + rotation + rescale on one backend (WGFHE_BACKEND),
    /// reporting resident memory and the GPU buffer pool at the start, middle and end.
    Soak(soak::SoakArgs),
    /// Encrypted inference as an HTTP service: clients upload evaluation keys and ciphertexts
    /// and get encrypted scores back (docs/serve.md).
    Serve(serve::ServeArgs),
    /// Write the models directory of `wgfhe serve --models DIR`: the parameter set and the
    /// integer models (trained on MNIST as `wgfhe mnist` trains them, or from model files).
    Models(models::ModelsArgs),
    /// The client of `wgfhe serve`: keys here, evaluation there, scores decrypted and (with
    /// --check) compared with the plaintext model.
    Infer(serve::InferArgs),
}

/// Exit status of a run stopped by `--stop-after` (its checkpoint complete up to that stage).
const STOPPED: u8 = 3;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let res = env::init().and_then(|()| match cli.command {
        Command::Params { json } => params::run(json),
        Command::Demo { params } => demo::run(&params),
        Command::Info { json } => info::run(json),
        Command::Mnist(args) => mnist::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Verify(args) => verify::run(&args),
        Command::Soak(args) => soak::run(&args),
        Command::Serve(args) => serve::run(&args),
        Command::Models(args) => models::run(&args),
        Command::Infer(args) => serve::infer(&args),
    });
    match res {
        Ok(()) => ExitCode::SUCCESS,
        // A checkpointed run stopped between stages as asked (`--stop-after`): not a failure
        // of the computation, and distinguishable from one.
        Err(e @ wgfhe::Error::CheckpointStopped { .. }) => {
            eprintln!("{e}");
            ExitCode::from(STOPPED)
        }
        Err(e) => {
            eprintln!("error: {e}");
            if let Some(hint) = check::hint(&e) {
                eprintln!("hint: {hint}");
            }
            ExitCode::FAILURE
        }
    }
}

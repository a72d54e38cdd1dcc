//! Checks of the command line shared by the subcommands, made before any work: counts, and the
//! hint printed under a parameter-set error.

use wgfhe::Error;

/// Parses a count of one or more (`--images`, `--reps`, ...), for clap's `value_parser`; the
/// message says what to type instead.
pub(crate) fn count(text: &str) -> Result<usize, String> {
    let trimmed = text.trim();
    match trimmed.parse::<usize>() {
        Ok(0) => Err("a count must be 1 or more (0 would do nothing)".to_owned()),
        Ok(n) => Ok(n),
        Err(_) if trimmed.parse::<i128>().is_ok() => Err("a count must be 1 or more, not negative".to_owned()),
        Err(_) => Err("a count must be a whole number of 1 or more".to_owned()),
    }
}

/// Where insecure test sets come from and how they are named.
const INSECURE_NAMES: &str = "insecure test sets are accepted only by `wgfhe mnist --insecure` and `wgfhe soak \
                              --insecure`, named \
                              insecure-test-bgv-n{log_n}-q{Q primes}-p{P primes}-d{dnum}-t{t}, such as \
                              insecure-test-bgv-n12-q5-p2-d3-t786433";

/// What to do about `err`, if the message alone does not say.
pub(crate) fn hint(err: &Error) -> Option<String> {
    match err {
        Error::UnknownParameterSet { name } if name.starts_with("insecure-test-") => Some(INSECURE_NAMES.to_owned()),
        Error::UnknownParameterSet { .. } => Some("`wgfhe params` lists the parameter sets, such as bgv-n13".into()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts() {
        assert_eq!(count("3"), Ok(3));
        assert_eq!(count(" 12 "), Ok(12));
        assert!(count("0").unwrap_err().contains("1 or more"));
        assert!(count("-2").unwrap_err().contains("not negative"));
        assert!(count("two").unwrap_err().contains("whole number"));
        assert!(count("1.5").unwrap_err().contains("whole number"));
    }
}

//! Command lines printed for people to paste into a shell (sweep's
//! dry-run listing, `io --parse-only`).

/// An argument as a shell needs it: as is when it holds only characters no
/// shell treats specially, else in single quotes.
pub fn quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=+,@%".contains(c));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}

/// Arguments quoted and joined by spaces.
pub fn join<S: AsRef<str>>(args: &[S]) -> String {
    args.iter()
        .map(|a| quote(a.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_words_stay_and_others_are_quoted() {
        assert_eq!(
            join(&["io", "--bs", "4k", "/tmp/a b", "it's", ""]),
            "io --bs 4k '/tmp/a b' 'it'\\''s' ''"
        );
    }
}

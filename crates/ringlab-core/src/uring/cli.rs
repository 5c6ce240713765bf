//! The knobs as command-line flags, built from the table with clap's
//! builder API: a row is a flag, its help text is the row's. Flatten
//! [`IoKnobArgs`] or [`HttpKnobArgs`] into a derived `Args` struct.

use super::knobs::{Arg, Offered, UringOptions, KNOBS};
use clap::builder::PossibleValuesParser;
use clap::parser::ValueSource;
use clap::{ArgMatches, Command, FromArgMatches};
use std::marker::PhantomData;

/// Which command the flags are for.
pub trait Audience {
    const HEADING: &'static str;
    fn offers(o: Offered) -> bool;
}

/// `ringlab io`: every knob.
#[derive(Debug, Clone, Copy, Default)]
pub struct Io;
/// `ringlab http`: the knobs that apply to socket rings.
#[derive(Debug, Clone, Copy, Default)]
pub struct Http;

impl Audience for Io {
    const HEADING: &'static str = "io_uring knobs (--engine uring)";
    fn offers(_: Offered) -> bool {
        true
    }
}

impl Audience for Http {
    const HEADING: &'static str = "io_uring ring setup (--io uring*)";
    fn offers(o: Offered) -> bool {
        o == Offered::IoAndHttp
    }
}

/// The knobs given on the command line, in table order, with their text
/// (`None` for a switch).
#[derive(Debug, Clone)]
pub struct KnobArgs<A> {
    pub given: Vec<(&'static str, Option<String>)>,
    audience: PhantomData<A>,
}

impl<A> Default for KnobArgs<A> {
    fn default() -> Self {
        KnobArgs {
            given: Vec::new(),
            audience: PhantomData,
        }
    }
}

pub type IoKnobArgs = KnobArgs<Io>;
pub type HttpKnobArgs = KnobArgs<Http>;

impl<A> KnobArgs<A> {
    /// Knobs as if typed: `[("sqpoll", None), ("sqpoll-idle", Some("5"))]`.
    pub fn of(given: &[(&'static str, Option<&str>)]) -> Self {
        KnobArgs {
            given: given
                .iter()
                .map(|(f, t)| (*f, t.map(str::to_string)))
                .collect(),
            audience: PhantomData,
        }
    }

    /// The flags given, by name.
    pub fn given(&self) -> Vec<&'static str> {
        self.given.iter().map(|(f, _)| *f).collect()
    }

    pub fn has(&self, flag: &str) -> bool {
        self.given.iter().any(|(f, _)| *f == flag)
    }

    /// The options with exactly the given knobs set (no preset expanded, no
    /// default filled in, nothing checked).
    pub fn apply(&self) -> anyhow::Result<UringOptions> {
        let mut o = UringOptions::default();
        for (flag, text) in &self.given {
            if let Some(k) = super::knobs::knob(flag) {
                (k.set)(&mut o, text.as_deref())?;
            }
        }
        Ok(o)
    }
}

impl<A: Audience> FromArgMatches for KnobArgs<A> {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let mut given = Vec::new();
        for k in KNOBS.iter().filter(|k| A::offers(k.offered)) {
            if m.value_source(k.flag) != Some(ValueSource::CommandLine) {
                continue;
            }
            let text = match k.arg {
                Arg::Switch => None,
                _ => m
                    .get_raw(k.flag)
                    .and_then(|mut v| v.next())
                    .map(|t| t.to_string_lossy().into_owned())
                    .or_else(|| match k.arg {
                        Arg::OptionalValue { missing, .. } => Some(missing.to_string()),
                        _ => None,
                    }),
            };
            given.push((k.flag, text));
        }
        Ok(KnobArgs {
            given,
            audience: PhantomData,
        })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl<A: Audience> clap::Args for KnobArgs<A> {
    fn augment_args(cmd: Command) -> Command {
        let mut cmd = cmd;
        for k in KNOBS.iter().filter(|k| A::offers(k.offered)) {
            let arg = clap::Arg::new(k.flag)
                .long(k.flag)
                .help(k.help)
                .help_heading(A::HEADING);
            let arg = match k.arg {
                Arg::Switch => arg.action(clap::ArgAction::SetTrue),
                Arg::Value(name @ "B,U") => arg.value_name(name),
                Arg::Value(name) => arg.value_name(name).value_parser(clap::value_parser!(u32)),
                Arg::OptionalValue { name, missing } => arg
                    .value_name(name)
                    .value_parser(clap::value_parser!(u32))
                    .num_args(0..=1)
                    .require_equals(true)
                    .default_missing_value(missing),
                Arg::Choice(name, values) => arg
                    .value_name(name)
                    .value_parser(PossibleValuesParser::new(values)),
            };
            cmd = cmd.arg(arg);
        }
        cmd
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

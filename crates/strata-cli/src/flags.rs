//! Library errors said in the command line's terms.

use crate::CliError;
use strata::StrataError;

/// Says a library error about a parameter in terms of the flag that sets it (`levels` →
/// `--levels`) where `command` has that flag, so that the checks live in the library alone and
/// every subcommand names its own flags (`strata bench --pre-smooth`).
pub fn flag_error(e: CliError, command: &clap::Command) -> CliError {
    let Some(StrataError::InvalidParameter { name, msg }) = e.downcast_ref::<StrataError>() else {
        return e;
    };
    let flag = name.replace('_', "-");
    if command
        .get_arguments()
        .any(|a| a.get_long() == Some(flag.as_str()))
    {
        return format!("--{flag} {msg}").into();
    }
    e
}

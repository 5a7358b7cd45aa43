//! The kernel tuning the environment asks for ([`Tuning::from_env`]): every `STRATA_CUDA_*`
//! variable of [`Tuning`] parsed strictly, so that a mistyped value is an error that names the
//! variable rather than a silently different configuration.

use crate::compile::BLOCK_THREADS;
use crate::kernels::{
    Tuning, BLOCK_X, FUSED_PCR_COLUMNS, NARROW_FINEST_VALUES, PCR_COLUMNS, SEGMENT_THREADS,
    SPLIT_COLUMNS, THOMAS_SMEM, TILE_STREAMS_COLUMNS, TWIN_THREADS,
};
use strata::{Result, StrataError};

impl Tuning {
    /// The tuning the environment asks for (the variables listed at [`Tuning`]); an unset or
    /// empty variable keeps its default. Fails on a value the variable does not take: a count
    /// that is not a whole number, a switch other than `0` or `1`, a block width that is not a
    /// power of two from 8 to 128.
    pub fn from_env() -> Result<Self> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// [`Tuning::from_env`] with the variables' values from `get` (`None`: unset).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let value = |name: &str| {
            get(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let bad = |name: &str, v: &str, expected: &str| {
            StrataError::invalid(name, format!("is `{v}`; {expected}"))
        };
        let count = |name: &str, default: usize| -> Result<usize> {
            value(name).map_or(Ok(default), |v| {
                v.parse()
                    .map_err(|_| bad(name, &v, "a whole number is expected (0: never)"))
            })
        };
        let switch = |name: &str, default: bool| -> Result<bool> {
            match value(name).as_deref() {
                None => Ok(default),
                Some("0") => Ok(false),
                Some("1") => Ok(true),
                Some(v) => Err(bad(name, v, "0 (off) or 1 (on) is expected")),
            }
        };
        let block_x = match value("STRATA_CUDA_BLOCK_X") {
            None => BLOCK_X,
            Some(v) => v
                .parse::<u32>()
                .ok()
                .filter(|b| b.is_power_of_two() && (8..=BLOCK_THREADS).contains(b))
                .ok_or_else(|| {
                    let expected = format!("a power of two from 8 to {BLOCK_THREADS} is expected");
                    bad("STRATA_CUDA_BLOCK_X", &v, &expected)
                })?,
        };
        let fuse = "STRATA_CUDA_FUSE_CORRECTION";
        let (fuse_correction, fuse_correction_cells) = match value(fuse).as_deref() {
            None | Some("1") => (true, true),
            Some("0") => (false, false),
            Some("columns") => (true, false),
            Some(v) => {
                let expected =
                    "0 (never), 1 (every level) or columns (levels with column coefficients) is expected";
                return Err(bad(fuse, v, expected));
            }
        };
        Ok(Self {
            options: get("STRATA_CUDA_OPTIONS")
                .map(|o| o.split_whitespace().map(String::from).collect())
                .unwrap_or_default(),
            block_x,
            pcr_columns: count("STRATA_CUDA_PCR_COLUMNS", PCR_COLUMNS)?,
            pcr_by_block: switch("STRATA_CUDA_PCR_BY_BLOCK", false)?,
            tile_streams_columns: count("STRATA_CUDA_TILE_STREAMS", TILE_STREAMS_COLUMNS)?,
            narrow_values: count("STRATA_CUDA_NARROW_VALUES", NARROW_FINEST_VALUES)?,
            graphs: switch("STRATA_CUDA_GRAPHS", true)?,
            loops: switch("STRATA_CUDA_LOOPS", false)?,
            segment_threads: count("STRATA_CUDA_SEGMENT_THREADS", SEGMENT_THREADS)?,
            thomas_smem: count("STRATA_CUDA_THOMAS_SMEM", THOMAS_SMEM)?,
            fuse_f32: switch("STRATA_CUDA_FUSE_F32", true)?,
            fused_pcr_columns: count("STRATA_CUDA_FUSED_PCR_COLUMNS", FUSED_PCR_COLUMNS)?,
            twin_threads: count("STRATA_CUDA_TWIN_THREADS", TWIN_THREADS)?,
            split_columns: count("STRATA_CUDA_SPLIT_COLUMNS", SPLIT_COLUMNS)?,
            fuse_correction,
            fuse_correction_cells,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn tuning(vars: &[(&str, &str)]) -> Result<Tuning> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Tuning::from_lookup(|name| map.get(name).cloned())
    }

    #[test]
    fn unset_and_empty_variables_keep_the_defaults() {
        assert_eq!(tuning(&[]).unwrap(), Tuning::default());
        let empty = tuning(&[("STRATA_CUDA_PCR_COLUMNS", " "), ("STRATA_CUDA_GRAPHS", "")]);
        assert_eq!(empty.unwrap(), Tuning::default());
    }

    #[test]
    fn values_set_the_tuning() {
        let t = tuning(&[
            ("STRATA_CUDA_OPTIONS", " -DKCH=8  -DRR_GROUP=0 "),
            ("STRATA_CUDA_BLOCK_X", "32"),
            ("STRATA_CUDA_PCR_COLUMNS", "0"),
            ("STRATA_CUDA_GRAPHS", "0"),
            ("STRATA_CUDA_LOOPS", "1"),
            ("STRATA_CUDA_FUSE_CORRECTION", "columns"),
        ])
        .unwrap();
        assert_eq!(t.options, ["-DKCH=8", "-DRR_GROUP=0"]);
        assert_eq!((t.block_x, t.pcr_columns), (32, 0));
        assert!(!t.graphs && t.loops);
        assert!(t.fuse_correction && !t.fuse_correction_cells);
        let off = tuning(&[("STRATA_CUDA_FUSE_CORRECTION", "0")]).unwrap();
        assert!(!off.fuse_correction && !off.fuse_correction_cells);
    }

    #[test]
    fn a_value_the_variable_does_not_take_is_an_error_naming_it() {
        for (name, v) in [
            ("STRATA_CUDA_PCR_COLUMNS", "16k"),
            ("STRATA_CUDA_SPLIT_COLUMNS", "-1"),
            ("STRATA_CUDA_GRAPHS", "off"),
            ("STRATA_CUDA_LOOPS", "true"),
            ("STRATA_CUDA_BLOCK_X", "48"),
            ("STRATA_CUDA_BLOCK_X", "256"),
            ("STRATA_CUDA_FUSE_CORRECTION", "all"),
        ] {
            let e = tuning(&[(name, v)]).unwrap_err().to_string();
            assert!(
                e.contains(name) && e.contains(&format!("`{v}`")),
                "{name}={v}: {e}"
            );
        }
    }
}

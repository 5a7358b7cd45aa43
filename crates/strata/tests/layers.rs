//! The library's layering, checked from its sources: every module may use only the modules
//! below it, so there is no import circle and no upward import. Adding an edge that breaks the
//! order fails here with the file that added it.

use std::collections::BTreeSet;
use std::path::Path;

/// Bottom first. A module may use `crate::X` only for X earlier in this list.
const LAYERS: [&str; 14] = [
    "error",
    "precision",
    "grid",
    "problem",
    "field",
    "stencil",
    "matrix",
    "perf",
    "backend",
    "comm",
    "solver",
    "io",
    "api",
    "persistent",
];

fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn modules_use_only_the_layers_below_them() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = vec![];
    sources(&src, &mut files);
    let mut bad = BTreeSet::new();
    let mut edges = 0;
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap();
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let top = top.trim_end_matches(".rs").to_string();
        if top == "lib" {
            continue;
        }
        let level = LAYERS
            .iter()
            .position(|l| *l == top)
            .unwrap_or_else(|| panic!("{} is in no layer: add it to LAYERS", rel.display()));
        let text = std::fs::read_to_string(f).unwrap();
        for line in text.lines() {
            let code = line.split("//").next().unwrap_or("");
            for (at, _) in code.match_indices("crate::") {
                let name: String = code[at + 7..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                let Some(used) = LAYERS.iter().position(|l| *l == name) else {
                    continue;
                };
                edges += 1;
                if used > level {
                    bad.insert(format!("{} uses crate::{name}", rel.display()));
                }
            }
        }
    }
    assert!(
        edges > 20,
        "only {edges} imports found: is the parser broken?"
    );
    assert!(
        bad.is_empty(),
        "upward imports:\n{}",
        bad.into_iter().collect::<Vec<_>>().join("\n")
    );
}

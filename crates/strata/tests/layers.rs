//! The library's layering, checked from its sources: every module may use only the modules
//! below it, so there is no import circle and no upward import. Adding an edge that breaks the
//! order fails here with the file that added it.

use std::collections::BTreeSet;
use std::path::Path;

/// Bottom first. A module may use `crate::X` only for X earlier in this list.
const LAYERS: [&str; 16] = [
    "error",
    "names",
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
    "session",
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

/// The module (`a::b`, from the crate root) a source file defines, relative to `src`.
fn module_of(rel: &Path) -> String {
    let mut parts: Vec<String> = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().to_string())
        .collect();
    if parts
        .last()
        .is_some_and(|l| l == "mod" || l == "lib" || l == "main")
    {
        parts.pop();
    }
    parts.join("::")
}

/// The modules of the crate whose sources are under `src` that each module imports
/// (`crate::a::b::…` and `super::…` paths, resolved to the longest module that exists).
fn module_graph(src: &Path) -> std::collections::BTreeMap<String, BTreeSet<String>> {
    let mut files = vec![];
    sources(src, &mut files);
    let modules: BTreeSet<String> = files
        .iter()
        .map(|f| module_of(f.strip_prefix(src).unwrap()))
        .collect();
    let resolve = |path: &[String]| -> Option<String> {
        (1..=path.len())
            .rev()
            .map(|k| path[..k].join("::"))
            .find(|m| modules.contains(m))
    };
    let mut graph = std::collections::BTreeMap::new();
    for f in &files {
        let rel = f.strip_prefix(src).unwrap();
        let this = module_of(rel);
        // A `mod.rs`, `lib.rs` or `main.rs` is its own module; `super` of a file `a/b.rs` is `a`.
        let own_dir = matches!(
            rel.file_stem().and_then(|s| s.to_str()),
            Some("mod" | "lib" | "main")
        );
        let parent: Vec<String> = {
            let mut p: Vec<String> = this
                .split("::")
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect();
            if !own_dir || !p.is_empty() {
                p.pop();
            }
            p
        };
        let text = std::fs::read_to_string(f).unwrap();
        let mut uses = BTreeSet::new();
        // Only code before the unit tests: a test module may import what it tests from anywhere.
        let code_part = text.split("#[cfg(test)]").next().unwrap_or("");
        for line in code_part.lines() {
            let code = line.split("//").next().unwrap_or("");
            for (prefix, base) in [("crate::", vec![]), ("super::", parent.clone())] {
                for (at, _) in code.match_indices(prefix) {
                    if prefix == "super::" && at >= 7 && &code[at - 7..at] == "crate::" {
                        continue;
                    }
                    let rest = &code[at + prefix.len()..];
                    let mut path = base.clone();
                    path.extend(
                        rest.split("::")
                            .map(|s| {
                                s.chars()
                                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                                    .collect::<String>()
                            })
                            .take_while(|s| !s.is_empty()),
                    );
                    if let Some(m) = resolve(&path) {
                        if m != this && !this.starts_with(&format!("{m}::")) && !m.is_empty() {
                            uses.insert(m);
                        }
                    }
                }
            }
        }
        graph.insert(this, uses);
    }
    graph
}

/// A circle of imports in `graph`, if there is one.
fn find_circle(
    graph: &std::collections::BTreeMap<String, BTreeSet<String>>,
) -> Option<Vec<String>> {
    fn visit(
        m: &str,
        graph: &std::collections::BTreeMap<String, BTreeSet<String>>,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = stack.iter().position(|s| s == m) {
            let mut circle = stack[at..].to_vec();
            circle.push(m.to_string());
            return Some(circle);
        }
        if done.contains(m) {
            return None;
        }
        stack.push(m.to_string());
        for next in graph.get(m).into_iter().flatten() {
            if let Some(c) = visit(next, graph, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        done.insert(m.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for m in graph.keys() {
        if let Some(c) = visit(m, graph, &mut vec![], &mut done) {
            return Some(c);
        }
    }
    None
}

/// No module of any crate of the workspace imports a module that imports it back, at every
/// depth (not only the library's top-level layers).
#[test]
fn no_module_imports_one_that_imports_it_back() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut checked = 0;
    for e in std::fs::read_dir(&crates).unwrap() {
        let src = e.unwrap().path().join("src");
        if !src.is_dir() {
            continue;
        }
        let graph = module_graph(&src);
        let edges: usize = graph.values().map(BTreeSet::len).sum();
        checked += edges;
        if let Some(c) = find_circle(&graph) {
            panic!("{}: an import circle: {}", src.display(), c.join(" -> "));
        }
    }
    assert!(
        checked > 50,
        "only {checked} imports found: is the parser broken?"
    );
}

/// The circle check finds a circle (so that it can fail).
#[test]
fn the_circle_check_sees_a_circle() {
    let mut g = std::collections::BTreeMap::new();
    g.insert("a".to_string(), BTreeSet::from(["b::c".to_string()]));
    g.insert("b::c".to_string(), BTreeSet::from(["d".to_string()]));
    g.insert("d".to_string(), BTreeSet::from(["a".to_string()]));
    assert_eq!(find_circle(&g).unwrap(), ["a", "b::c", "d", "a"]);
    g.insert("d".to_string(), BTreeSet::new());
    assert!(find_circle(&g).is_none());
}

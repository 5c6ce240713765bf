//! No import cycles between the files of a crate: every `crate::` path in a
//! file's non-test code is an edge from that file's module to the module it
//! names, and the graph must have no cycle. (A module directory's children
//! naming their parent with `super::` is the usual layout, not counted.)

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module name (`engines::uring`, `plan`) -> its source without tests.
fn modules(src: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
                continue;
            }
            if p.extension().is_none_or(|x| x != "rs") {
                continue;
            }
            let rel = p.strip_prefix(src).unwrap().with_extension("");
            let name = rel
                .to_string_lossy()
                .trim_end_matches("/mod")
                .replace('/', "::");
            let text = std::fs::read_to_string(&p).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap().to_string();
            out.insert(if name == "lib" { String::new() } else { name }, code);
        }
    }
    out
}

fn edges(mods: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let mut g = BTreeMap::new();
    for (m, code) in mods {
        let mut to = BTreeSet::new();
        for (i, _) in code.match_indices("crate::") {
            let path: String = code[i + 7..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            let parts: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
            // The longest prefix that is a file.
            let target = (1..=parts.len())
                .rev()
                .map(|n| parts[..n].join("::"))
                .find(|c| mods.contains_key(c));
            if let Some(t) = target.filter(|t| t != m && !m.is_empty()) {
                to.insert(t);
            }
        }
        g.insert(m.clone(), to);
    }
    g
}

/// One cycle, if the graph has any.
fn find_cycle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        v: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(v.to_string(), 1);
        stack.push(v.to_string());
        for w in &g[v] {
            match state.get(w).copied().unwrap_or(0) {
                1 => {
                    let at = stack.iter().position(|s| s == w).unwrap();
                    return Some(stack[at..].to_vec());
                }
                0 => {
                    if let Some(c) = visit(w, g, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(v.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for v in g.keys() {
        if state.get(v).copied().unwrap_or(0) == 0 {
            if let Some(c) = visit(v, g, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn no_import_cycles_between_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for krate in [
        "ringlab-core",
        "ringlab-io",
        "ringlab-net",
        "ringlab-stats",
        "ringlab-kstat",
        "ringlab-lab",
    ] {
        let g = edges(&modules(&root.join(krate).join("src")));
        if let Some(c) = find_cycle(&g) {
            panic!(
                "{krate}: files import each other in a cycle: {}",
                c.join(" -> ")
            );
        }
    }
}

#[test]
fn the_cycle_finder_finds_cycles() {
    let mut mods = BTreeMap::new();
    mods.insert("a".to_string(), "use crate::b::X;".to_string());
    mods.insert("b".to_string(), "fn f() { crate::c::g() }".to_string());
    mods.insert("c".to_string(), "use crate::a;".to_string());
    mods.insert("d".to_string(), "use crate::a;".to_string());
    let c = find_cycle(&edges(&mods)).expect("a -> b -> c -> a");
    assert_eq!(c.len(), 3, "{c:?}");
    mods.insert("c".to_string(), "use crate::d;".to_string());
    mods.insert("d".to_string(), String::new());
    assert_eq!(find_cycle(&edges(&mods)), None);
}

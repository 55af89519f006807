//! The layering of docs/architecture.md, checked on the module graph the sources define.
//!
//! Every file of a top-level module of the library (`src/codec.rs`, `src/codec/**`) is parsed;
//! each `crate::…` path it names (in code, `use` trees and macro bodies, `#[cfg(test)]` items
//! left out, `super::` resolved) is an edge from its module to the module named. The tests
//! hold that graph acyclic, that every edge points down the declared layers, and that the
//! modules which run the pipeline or keep protocol state are out of the TUI's reach.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// The library's layers, bottom first. A module may name modules of its own layer or below,
/// never above; within a layer the graph test still forbids cycles.
const LAYERS: &[&[&str]] = &[
    // Types every layer speaks: direction, connection id, time, rules, violations, frame
    // context, close reasons; and the small self-contained helpers.
    &["base", "hash", "json", "files"],
    // Bytes to frames, no state.
    &["codec"],
    // The protocol table, the frame event and the stream deframer (sniff, skim, resync).
    &["protocol"],
    // The trackers (sans-IO): connection, session, link, channel; the frame context.
    &["state"],
    // What the layers above share about events: event, masking, the row model, the filter.
    &["event", "mask", "filter"],
    // Chunks of bytes to tracked events.
    &["pipeline"],
    // Sources and sinks: captures read and written, outputs, statistics, verdicts.
    &["capture", "sinks", "stats", "verdict", "browse"],
    // Running the pipeline over sources into sinks, live and offline.
    &["driver"],
    // What the user runs: the relay, the replay of files, the terminal UI, the report bundle
    // and the ring capture (both made from what the drivers run); the metrics endpoint beside
    // the relay (it reads the relay's probe).
    &["proxy", "replay", "tui", "bundle", "ring", "metrics"],
];

/// What the TUI may not name: the trackers, the pipeline and the drivers that run it, and the
/// codecs' decoders. It is handed events, and the code that re-runs the pipeline for it.
const OUT_OF_TUI_REACH: &[&str] = &["state", "pipeline", "driver", "replay", "proxy", "codec"];

/// Every `.rs` file under `dir`, recursively, in a stable order.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|x| x == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The top-level modules `src/lib.rs` declares.
fn top_modules(root: &Path) -> Vec<String> {
    let lib = syn::parse_file(&fs::read_to_string(root.join("src/lib.rs")).unwrap()).unwrap();
    lib.items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Mod(m) => Some(m.ident.to_string()),
            _ => None,
        })
        .collect()
}

/// The module path of a file below `src/` (`src/a/b.rs` and `src/a/b/mod.rs` are `[a, b]`).
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// True for an item under `#[cfg(test)]`.
fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test"))
    })
}

/// The top-level modules one file names, with the line of the first mention.
struct Mentions<'a> {
    /// The file's module path (its inline `mod` blocks pushed while inside them).
    here: Vec<String>,
    /// The crate's top-level modules.
    tops: &'a BTreeSet<String>,
    /// Module named -> first line.
    found: BTreeMap<String, usize>,
}

impl Mentions<'_> {
    /// Record the top-level module a path of segments reaches, if any.
    fn path(&mut self, segs: &[String], line: usize) {
        let target = match segs.first().map(String::as_str) {
            Some("crate" | "$crate") => segs.get(1),
            Some("super") => {
                let ups = segs.iter().take_while(|s| *s == "super").count();
                let mut at: Vec<&String> = self.here.iter().collect();
                at.truncate(at.len().saturating_sub(ups));
                match at.first() {
                    Some(top) => Some(*top),
                    None => segs.get(ups),
                }
            }
            _ => None,
        };
        if let Some(t) = target.filter(|t| self.tops.contains(*t)) {
            self.found.entry(t.clone()).or_insert(line);
        }
    }

    /// The `crate :: x` paths of a macro's tokens (its body is not parsed as code).
    fn tokens(&mut self, tokens: &str, line: usize) {
        let words: Vec<&str> = tokens.split_whitespace().collect();
        for (i, w) in words.iter().enumerate() {
            if (*w == "crate" || *w == "$crate")
                && words.get(i + 1) == Some(&"::")
                && let Some(next) = words.get(i + 2)
            {
                let segs = ["crate".to_string(), next.trim_matches('{').to_string()];
                self.path(&segs, line);
            }
        }
    }
}

/// The flattened prefixes of a `use` tree: `crate::{a, b::c}` gives `crate::a`, `crate::b`.
fn use_paths(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_paths(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => out.push([prefix.clone(), vec![n.ident.to_string()]].concat()),
        syn::UseTree::Rename(r) => out.push([prefix.clone(), vec![r.ident.to_string()]].concat()),
        syn::UseTree::Glob(_) => out.push(prefix.clone()),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                use_paths(t, prefix, out);
            }
        }
    }
}

impl<'ast> Visit<'ast> for Mentions<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Use(u) => &u.attrs,
            syn::Item::Struct(s) => &s.attrs,
            syn::Item::Enum(e) => &e.attrs,
            syn::Item::Const(c) => &c.attrs,
            syn::Item::Static(s) => &s.attrs,
            syn::Item::Macro(m) => &m.attrs,
            syn::Item::Trait(t) => &t.attrs,
            syn::Item::Type(t) => &t.attrs,
            _ => return syn::visit::visit_item(self, item),
        };
        if is_test_only(attrs) {
            return;
        }
        if let syn::Item::Mod(m) = item
            && m.content.is_some()
        {
            self.here.push(m.ident.to_string());
            syn::visit::visit_item(self, item);
            self.here.pop();
            return;
        }
        syn::visit::visit_item(self, item);
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        let mut paths = Vec::new();
        use_paths(&u.tree, &mut Vec::new(), &mut paths);
        let line = u.use_token.span.start().line;
        for p in paths {
            self.path(&p, line);
        }
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        let line = p
            .segments
            .first()
            .map_or(0, |s| s.ident.span().start().line);
        self.path(&segs, line);
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        let line = m.bang_token.span.start().line;
        self.tokens(&m.tokens.to_string(), line);
        syn::visit::visit_macro(self, m);
    }
}

/// The files of modules declared `#[cfg(test)] mod name;` (and everything below them): test
/// code, compiled only into the unit tests, is out of the graph as inline test modules are.
fn test_only_files(files: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for path in files {
        let Ok(file) = syn::parse_file(&fs::read_to_string(path).unwrap()) else {
            continue;
        };
        let stem = path.file_stem().unwrap().to_string_lossy().to_string();
        let dir = if stem == "mod" || stem == "lib" || stem == "main" {
            path.parent().unwrap().to_path_buf()
        } else {
            path.with_extension("")
        };
        for item in &file.items {
            if let syn::Item::Mod(m) = item
                && m.content.is_none()
                && is_test_only(&m.attrs)
            {
                let name = m.ident.to_string();
                out.push(dir.join(format!("{name}.rs")));
                out.push(dir.join(&name));
            }
        }
    }
    out
}

/// module -> module named -> where (`src/file.rs:line`).
type Graph = BTreeMap<String, BTreeMap<String, String>>;

/// The crate's module graph, read from its sources.
fn graph() -> Graph {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tops: BTreeSet<String> = top_modules(root).into_iter().collect();
    let mut g = Graph::new();
    let files = sources(&root.join("src"));
    let tests_only = test_only_files(&files);
    for path in files {
        if tests_only.iter().any(|t| path.starts_with(t)) {
            continue;
        }
        let rel = path.strip_prefix(root.join("src")).unwrap();
        let here = module_path(rel);
        let Some(top) = here.first().filter(|t| tops.contains(*t)).cloned() else {
            continue;
        };
        let src = fs::read_to_string(&path).unwrap();
        let file = syn::parse_file(&src).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut m = Mentions {
            here,
            tops: &tops,
            found: BTreeMap::new(),
        };
        m.visit_file(&file);
        let edges = g.entry(top.clone()).or_default();
        for (to, line) in m.found {
            if to != top {
                edges
                    .entry(to)
                    .or_insert_with(|| format!("src/{}:{line}", rel.display()));
            }
        }
    }
    g
}

/// The strongly connected components of more than one module (Tarjan's algorithm).
fn cycles(g: &Graph) -> Vec<Vec<String>> {
    struct Walk<'g> {
        g: &'g Graph,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        out: Vec<Vec<String>>,
    }
    impl<'g> Walk<'g> {
        fn visit(&mut self, v: &'g str) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.g.get(v).into_iter().flat_map(|e| e.keys()) {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if self.on_stack.contains(w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut scc = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    scc.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if scc.len() > 1 {
                    scc.sort();
                    self.out.push(scc);
                }
            }
        }
    }
    let mut walk = Walk {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in g.keys() {
        if !walk.index.contains_key(v.as_str()) {
            walk.visit(v);
        }
    }
    walk.out
}

/// The edges inside one cycle, with where each is made.
fn cycle_edges(g: &Graph, scc: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for from in scc {
        for (to, at) in g.get(from).into_iter().flatten() {
            if scc.contains(to) {
                out.push(format!("  {from} -> {to} ({at})"));
            }
        }
    }
    out
}

/// The layer a module is declared in.
fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

#[test]
fn the_module_graph_has_no_cycle() {
    let g = graph();
    let found: Vec<String> = cycles(&g)
        .iter()
        .map(|scc| {
            format!(
                "{}:\n{}",
                scc.join(" <-> "),
                cycle_edges(&g, scc).join("\n")
            )
        })
        .collect();
    assert!(
        found.is_empty(),
        "the top-level modules import each other in a cycle:\n{}",
        found.join("\n")
    );
}

#[test]
fn every_module_names_only_its_own_layer_and_those_below() {
    let g = graph();
    let mut wrong = Vec::new();
    for from in top_modules(Path::new(env!("CARGO_MANIFEST_DIR"))) {
        let Some(lf) = layer_of(&from) else {
            wrong.push(format!("  {from} is in no layer of LAYERS: place it"));
            continue;
        };
        for (to, at) in g.get(&from).into_iter().flatten() {
            if layer_of(to).is_some_and(|lt| lt > lf) {
                wrong.push(format!("  {from} -> {to} points up ({at})"));
            }
        }
    }
    assert!(wrong.is_empty(), "layering:\n{}", wrong.join("\n"));
}

#[test]
fn the_tui_names_no_tracker_no_pipeline_and_no_decoder() {
    let g = graph();
    let bad: Vec<String> = g
        .get("tui")
        .into_iter()
        .flatten()
        .filter(|(to, _)| OUT_OF_TUI_REACH.contains(&to.as_str()))
        .map(|(to, at)| format!("  tui -> {to} ({at})"))
        .collect();
    assert!(
        bad.is_empty(),
        "src/tui names what runs or tracks the pipeline:\n{}",
        bad.join("\n")
    );
}

/// The graph reader itself: `use` groups, `super::` out of a folder, macro bodies and test
/// modules are read as the compiler would resolve them.
#[test]
fn the_reader_resolves_groups_super_macros_and_skips_tests() {
    let tops: BTreeSet<String> = ["a", "b", "c", "d", "e"].map(String::from).into();
    let src = "use crate::{a::X, b};\n\
               fn f() { super::super::c::g(); }\n\
               m! { $crate::d::h }\n\
               #[cfg(test)] mod tests { use crate::e; }";
    let mut m = Mentions {
        here: vec!["z".into(), "y".into()],
        tops: &tops,
        found: BTreeMap::new(),
    };
    m.visit_file(&syn::parse_file(src).unwrap());
    let names: Vec<&str> = m.found.keys().map(String::as_str).collect();
    assert_eq!(names, ["a", "b", "c", "d"]);
}

#[test]
fn a_test_module_in_its_own_file_is_left_out_of_the_graph() {
    let dir = std::env::temp_dir().join(format!("amqpeek-arch-{}", std::process::id()));
    let sub = dir.join("a");
    fs::create_dir_all(sub.join("probe")).unwrap();
    fs::write(dir.join("a.rs"), "mod kept;\n#[cfg(test)]\nmod probe;\n").unwrap();
    fs::write(sub.join("kept.rs"), "").unwrap();
    fs::write(sub.join("probe.rs"), "").unwrap();
    fs::write(sub.join("probe/inner.rs"), "").unwrap();
    let files = sources(&dir);
    let out = test_only_files(&files);
    let left: BTreeSet<&PathBuf> = files
        .iter()
        .filter(|f| !out.iter().any(|t| f.starts_with(t)))
        .collect();
    fs::remove_dir_all(&dir).unwrap();
    assert_eq!(left, [&dir.join("a.rs"), &sub.join("kept.rs")].into());
}

//! Reads a YAML document as pnpm reads `pnpm-lock.yaml` (js-yaml 4's `load`, default schema),
//! for the native frozen install, which has to know the lockfile before pnpm has read it (pnpm
//! hands its lockfile to hooks only after its up-to-date check, which the native install must
//! come before). The document comes out as JSON text, which `JSON.parse` turns into the values
//! js-yaml gives.
//!
//! js-yaml's semantics: merge keys (`<<`) resolved, a key given twice refused, keys named as JS
//! names them, one document only. What is not read here exactly as js-yaml reads it (tags,
//! timestamps, rare number forms, non-scalar keys, `__proto__`) is refused with
//! [`YamlError::Unsupported`], and the install is left to pnpm.
//!
//! Bounded by design on untrusted input: the events are read in a loop with an explicit stack
//! (no recursion per nesting level), nesting is limited to [`MAX_DEPTH`], and aliases are
//! shared, not copied, while the document is read; the values they (and merge keys) repeat are
//! limited to [`MAX_REPEATED_VALUES`], which bounds the JSON text too.

use std::collections::{HashMap, HashSet};

use thiserror::Error;
use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

use crate::error_code::ErrorCode;

mod scalar;

/// Deeper nesting than this is refused: a lockfile's is about five levels.
pub const MAX_DEPTH: usize = 100;
/// At most this many values repeated by aliases and merge keys (a lockfile pnpm writes has none).
pub const MAX_REPEATED_VALUES: u64 = 100_000;

/// Why a YAML text was not read.
#[derive(Debug, Error)]
pub enum YamlError {
    /// Not YAML js-yaml reads: pnpm reports the lockfile broken.
    #[error("{0}")]
    Syntax(String),
    /// YAML this does not read exactly as js-yaml does.
    #[error("{0}")]
    Unsupported(String),
    /// Beyond the bounds above.
    #[error("{0}")]
    Limit(String),
}

impl From<yaml_rust2::ScanError> for YamlError {
    fn from(e: yaml_rust2::ScanError) -> Self {
        // The scanner's own bound on flow nesting.
        if e.info().contains("recursion limit") {
            YamlError::Limit(e.to_string())
        } else {
            YamlError::Syntax(e.to_string())
        }
    }
}

impl ErrorCode for YamlError {
    fn code(&self) -> &'static str {
        match self {
            YamlError::Syntax(_) => "ERR_CAS_NATIVE_YAML_SYNTAX",
            YamlError::Unsupported(_) => "ERR_CAS_NATIVE_YAML_UNSUPPORTED",
            YamlError::Limit(_) => "ERR_CAS_NATIVE_YAML_LIMIT",
        }
    }
}

/// A value of the document. Collections refer to their children by index in [`Loader::nodes`],
/// which holds every node after its children, so that an alias is one more reference.
#[derive(Debug, Clone, PartialEq)]
enum Node {
    Null,
    Bool(bool),
    Number(f64),
    String(String),
    Seq(Vec<usize>),
    Map(Vec<(String, usize)>),
}

/// A key read, waiting for its value.
enum Key {
    Merge,
    Name(String),
}

/// A collection being read.
enum Frame {
    Seq {
        anchor: usize,
        items: Vec<usize>,
    },
    Map {
        anchor: usize,
        entries: Vec<(String, usize)>,
        /// Key → its index in `entries`.
        index: HashMap<String, usize>,
        /// Keys a merge key brought in, which the mapping's own keys may override once.
        merged: HashSet<String>,
        key: Option<Key>,
    },
}

#[derive(Default)]
struct Loader {
    nodes: Vec<Node>,
    /// Per node: how many levels deep it is (1 for a scalar).
    heights: Vec<usize>,
    /// Per node: how many values it holds once every alias is expanded.
    sizes: Vec<u64>,
    anchors: HashMap<usize, usize>,
    stack: Vec<Frame>,
    repeated: u64,
    documents: usize,
    root: Option<usize>,
}

/// The one document of `text` as JSON, or `None` when it has none (js-yaml gives `undefined`).
pub fn load_json(text: &str) -> Result<Option<String>, YamlError> {
    refuse_non_printable(text)?;
    let mut loader = Loader::default();
    let mut parser = Parser::new_from_str(text);
    loop {
        let (event, mark) = parser.next_token()?;
        if event == Event::StreamEnd {
            break;
        }
        loader.event(event, mark)?;
    }
    Ok(loader.root.map(|root| to_json(&loader.nodes, root)))
}

/// js-yaml refuses a NUL anywhere and the other non-printable characters in content; this
/// refuses them anywhere (a comment holding one is left to pnpm too).
fn refuse_non_printable(text: &str) -> Result<(), YamlError> {
    let bad = |c: char| matches!(c, '\0'..='\x08' | '\x0b' | '\x0c' | '\x0e'..='\x1f' | '\x7f'..='\u{84}' | '\u{86}'..='\u{9f}' | '\u{fffe}' | '\u{ffff}');
    match text.char_indices().find(|&(_, c)| bad(c)) {
        Some((at, c)) => Err(YamlError::Syntax(format!(
            "the stream contains the non-printable character U+{:04X} at byte {at}",
            c as u32
        ))),
        None => Ok(()),
    }
}

impl Loader {
    fn event(&mut self, event: Event, mark: Marker) -> Result<(), YamlError> {
        let at = |what: &str| format!("{what} (line {}, column {})", mark.line(), mark.col() + 1);
        match event {
            Event::DocumentStart => {
                self.documents += 1;
                if self.documents > 1 {
                    return Err(YamlError::Syntax(at(
                        "expected a single document in the stream, but found more",
                    )));
                }
            }
            Event::Scalar(_, _, _, Some(_))
            | Event::SequenceStart(_, Some(_))
            | Event::MappingStart(_, Some(_)) => return Err(YamlError::Unsupported(at("a tag"))),
            Event::Scalar(text, style, anchor, None) if self.wants_key() => {
                if anchor != 0 {
                    return Err(YamlError::Unsupported(at("an anchor on a key")));
                }
                let key = if style != TScalarStyle::Plain {
                    Key::Name(text)
                } else if text == "<<" {
                    Key::Merge
                } else {
                    Key::Name(scalar::key(&text).map_err(|why| YamlError::Unsupported(at(&why)))?)
                };
                if matches!(&key, Key::Name(name) if name == "__proto__") {
                    return Err(YamlError::Unsupported(at("a __proto__ key")));
                }
                if let Some(Frame::Map { key: slot, .. }) = self.stack.last_mut() {
                    *slot = Some(key);
                }
            }
            Event::Alias(_) | Event::SequenceStart(..) | Event::MappingStart(..)
                if self.wants_key() =>
            {
                return Err(YamlError::Unsupported(at("a key that is not a scalar")));
            }
            Event::Scalar(text, style, anchor, None) => {
                let node = if style == TScalarStyle::Plain {
                    scalar::plain(&text).map_err(|why| YamlError::Unsupported(at(&why)))?
                } else {
                    Node::String(text)
                };
                let id = self.push(node, anchor);
                self.add(id, &at)?;
            }
            Event::Alias(anchor) => {
                // An anchor still open (an alias inside its own node) makes a cycle.
                let Some(&id) = self.anchors.get(&anchor) else {
                    return Err(YamlError::Unsupported(at(
                        "an alias of a node that is not complete",
                    )));
                };
                self.repeat(self.sizes[id], &at)?;
                self.add(id, &at)?;
            }
            Event::SequenceStart(anchor, None) => self.open(
                Frame::Seq {
                    anchor,
                    items: Vec::new(),
                },
                &at,
            )?,
            Event::MappingStart(anchor, None) => self.open(
                Frame::Map {
                    anchor,
                    entries: Vec::new(),
                    index: HashMap::new(),
                    merged: HashSet::new(),
                    key: None,
                },
                &at,
            )?,
            Event::SequenceEnd | Event::MappingEnd => {
                let (node, anchor) = match self.stack.pop() {
                    Some(Frame::Seq { anchor, items }) => (Node::Seq(items), anchor),
                    Some(Frame::Map {
                        anchor, entries, ..
                    }) => (Node::Map(entries), anchor),
                    None => {
                        return Err(YamlError::Syntax(at(
                            "a collection ends that never started",
                        )))
                    }
                };
                let id = self.push(node, anchor);
                self.add(id, &at)?;
            }
            _ => {}
        }
        Ok(())
    }

    /// Whether the next node is a mapping key.
    fn wants_key(&self) -> bool {
        matches!(self.stack.last(), Some(Frame::Map { key: None, .. }))
    }

    fn open(&mut self, frame: Frame, at: &dyn Fn(&str) -> String) -> Result<(), YamlError> {
        if self.stack.len() >= MAX_DEPTH {
            return Err(YamlError::Limit(at(&format!(
                "nested deeper than {MAX_DEPTH} levels"
            ))));
        }
        self.stack.push(frame);
        Ok(())
    }

    /// Records a complete node (and its anchor), with its height and expanded size.
    fn push(&mut self, node: Node, anchor: usize) -> usize {
        let children: Vec<usize> = match &node {
            Node::Seq(items) => items.clone(),
            Node::Map(entries) => entries.iter().map(|&(_, v)| v).collect(),
            _ => Vec::new(),
        };
        let height = 1 + children.iter().map(|&c| self.heights[c]).max().unwrap_or(0);
        let size = children
            .iter()
            .fold(1u64, |sum, &c| sum.saturating_add(self.sizes[c]));
        let id = self.nodes.len();
        self.nodes.push(node);
        self.heights.push(height);
        self.sizes.push(size);
        if anchor != 0 {
            self.anchors.insert(anchor, id);
        }
        id
    }

    fn repeat(&mut self, values: u64, at: &dyn Fn(&str) -> String) -> Result<(), YamlError> {
        self.repeated = self.repeated.saturating_add(values);
        if self.repeated > MAX_REPEATED_VALUES {
            return Err(YamlError::Limit(at(&format!(
                "aliases and merge keys repeat more than {MAX_REPEATED_VALUES} values"
            ))));
        }
        Ok(())
    }

    /// Puts node `id` where the open collection (or the document) wants it.
    fn add(&mut self, id: usize, at: &dyn Fn(&str) -> String) -> Result<(), YamlError> {
        // An alias brings its node's depth along, whatever depth it is used at.
        if self.stack.len() + self.heights[id] > MAX_DEPTH {
            return Err(YamlError::Limit(at(&format!(
                "nested deeper than {MAX_DEPTH} levels"
            ))));
        }
        match self.stack.last_mut() {
            None => self.root = Some(id),
            Some(Frame::Seq { items, .. }) => items.push(id),
            Some(Frame::Map { key, .. }) => match key.take() {
                Some(Key::Merge) => self.merge(id, at)?,
                Some(Key::Name(name)) => self.set(name, id, at)?,
                None => unreachable!("a key is never added as a value"),
            },
        }
        Ok(())
    }

    /// The open mapping's entries, their index by key, and the keys a merge brought in.
    #[allow(clippy::type_complexity)]
    fn open_map(
        &mut self,
    ) -> (
        &mut Vec<(String, usize)>,
        &mut HashMap<String, usize>,
        &mut HashSet<String>,
    ) {
        match self.stack.last_mut() {
            Some(Frame::Map {
                entries,
                index,
                merged,
                ..
            }) => (entries, index, merged),
            _ => unreachable!("keys and merges are read in a mapping"),
        }
    }

    /// An entry of the open mapping: a key given twice is refused, unless a merge brought it.
    fn set(
        &mut self,
        name: String,
        id: usize,
        at: &dyn Fn(&str) -> String,
    ) -> Result<(), YamlError> {
        let (entries, index, merged) = self.open_map();
        match index.get(&name) {
            Some(&i) if merged.remove(&name) => entries[i].1 = id,
            Some(_) => {
                return Err(YamlError::Syntax(at(&format!(
                    "duplicated mapping key {}",
                    crate::json::quote(&name)
                ))))
            }
            None => {
                index.insert(name.clone(), entries.len());
                entries.push((name, id));
            }
        }
        Ok(())
    }

    /// `<<: mapping` or `<<: [mappings]`: each key the open mapping does not have yet, in order.
    fn merge(&mut self, id: usize, at: &dyn Fn(&str) -> String) -> Result<(), YamlError> {
        let sources = match &self.nodes[id] {
            Node::Seq(items) => items.clone(),
            _ => vec![id],
        };
        for source in sources {
            let Node::Map(source_entries) = &self.nodes[source] else {
                return Err(YamlError::Unsupported(at(
                    "a merge key whose value is not a mapping",
                )));
            };
            let source_entries = source_entries.clone();
            let (entries, index, merged) = self.open_map();
            let mut copied = Vec::new();
            for (name, value) in source_entries {
                if !index.contains_key(&name) {
                    index.insert(name.clone(), entries.len());
                    merged.insert(name.clone());
                    entries.push((name, value));
                    copied.push(value);
                }
            }
            let values = copied
                .iter()
                .fold(0u64, |sum, &v| sum.saturating_add(self.sizes[v]));
            self.repeat(values, at)?;
        }
        Ok(())
    }
}

/// The JSON text of node `root`, written with an explicit stack.
fn to_json(nodes: &[Node], root: usize) -> String {
    let mut out = String::new();
    // Open collections: the node and how many of its children are written.
    let mut open: Vec<(usize, usize)> = Vec::new();
    let mut next = Some(root);
    loop {
        if let Some(id) = next.take() {
            match &nodes[id] {
                Node::Null => out.push_str("null"),
                Node::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
                // `-0` keeps its sign (JSON.parse reads it back as -0).
                Node::Number(n) if *n == 0.0 && n.is_sign_negative() => out.push_str("-0"),
                Node::Number(n) => out.push_str(&crate::json::number_to_string(*n)),
                Node::String(s) => out.push_str(&crate::json::quote(s)),
                Node::Seq(_) => {
                    out.push('[');
                    open.push((id, 0));
                }
                Node::Map(_) => {
                    out.push('{');
                    open.push((id, 0));
                }
            }
        }
        let Some((id, written)) = open.last_mut() else {
            break;
        };
        let (len, close) = match &nodes[*id] {
            Node::Seq(items) => (items.len(), ']'),
            Node::Map(entries) => (entries.len(), '}'),
            _ => unreachable!("only collections are open"),
        };
        if *written == len {
            out.push(close);
            open.pop();
            continue;
        }
        if *written > 0 {
            out.push(',');
        }
        next = Some(match &nodes[*id] {
            Node::Seq(items) => items[*written],
            Node::Map(entries) => {
                let (name, value) = &entries[*written];
                out.push_str(&crate::json::quote(name));
                out.push(':');
                *value
            }
            _ => unreachable!("only collections are open"),
        });
        *written += 1;
    }
    out
}

#[cfg(test)]
mod tests;

//! The mutant generator: systematic one-edit variants of a Lua script.
//!
//! No crate mutates Lua (the mutation tools there are for Rust, C, Java or
//! JavaScript), so this is a small hand-written tokenizer over the script's
//! text and a few rules over its tokens. It needs no full Lua parser: every
//! rule looks at a token and its immediate neighbours, or at a condition
//! delimited by its keywords (`if … then`, `while … do`), split at its
//! top-level `or`/`and`. Comments and strings are tokens of their own, so
//! nothing inside them is ever mutated, and only the script's own file is
//! tokenized: the shared `decimal.lua` prefix is never touched.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

/// What kind of change a mutant makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MutantKind {
    /// A comparison operator loosened, tightened or negated (`<` → `<=`,
    /// `<` → `>=`, `==` → `~=`, …).
    Comparison,
    /// A `+ 1` or `- 1` dropped or flipped.
    Boundary,
    /// A condition's operand dropped (`A and B` → `A`), a `not` dropped, or
    /// a whole `if`/`while` condition made `true` or `false`.
    Condition,
    /// A write to Redis removed (a write statement deleted; an `INCR` whose
    /// value is used replaced by the value it would have returned, unwritten).
    WriteRemoved,
    /// Two arguments of one call swapped, at least one of them `KEYS[n]` or
    /// `ARGV[n]`.
    ArgsSwapped,
}

impl MutantKind {
    /// The kind's name as the report writes it.
    pub fn name(self) -> &'static str {
        match self {
            MutantKind::Comparison => "comparison",
            MutantKind::Boundary => "boundary",
            MutantKind::Condition => "condition",
            MutantKind::WriteRemoved => "write_removed",
            MutantKind::ArgsSwapped => "args_swapped",
        }
    }
}

/// One mutant: a script's whole file with exactly one change (one edit, or
/// for a swap the two halves of one exchange) at a known line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mutant {
    /// Stable across runs and machines: a hash of the script's name and the
    /// mutated text, so a resumed run recognises the mutants it decided.
    pub id: String,
    /// The script's file name under `stores/lua`.
    pub script: String,
    /// The first line changed, 1-based within the script's own file.
    pub line: usize,
    /// The kind of change.
    pub kind: MutantKind,
    /// The changed lines as they were.
    pub before: String,
    /// The changed lines as the mutant has them.
    pub after: String,
    /// The mutated file (without the shared prefix).
    pub body: String,
}

impl Mutant {
    /// The `-`/`+` diff of the changed lines.
    pub fn diff(&self) -> String {
        let mut out = String::new();
        for l in self.before.lines() {
            out.push_str(&format!("- {l}\n"));
        }
        // A removed statement leaves at most its indentation: one empty `+`.
        if self.after.trim().is_empty() {
            out.push_str("+\n");
        } else {
            for l in self.after.lines() {
                out.push_str(&format!("+ {l}\n"));
            }
        }
        out
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    Name,
    Number,
    Str,
    Op,
}

#[derive(Debug, Clone)]
struct Token<'a> {
    kind: Tok,
    text: &'a str,
    start: usize,
    end: usize,
}

const KEYWORDS: &[&str] = &[
    "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if", "in",
    "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while",
];

/// The commands whose removal is a lost write.
const WRITES: &[&str] = &[
    "SET",
    "SETEX",
    "PSETEX",
    "SETNX",
    "GETSET",
    "DEL",
    "UNLINK",
    "HSET",
    "HMSET",
    "HDEL",
    "HSETNX",
    "HINCRBY",
    "PEXPIRE",
    "EXPIRE",
    "PEXPIREAT",
    "EXPIREAT",
    "PERSIST",
    "ZADD",
    "ZREM",
    "ZREMRANGEBYSCORE",
    "ZREMRANGEBYRANK",
    "ZINCRBY",
    "INCR",
    "INCRBY",
    "DECR",
    "DECRBY",
    "LPUSH",
    "RPUSH",
    "LPOP",
    "RPOP",
    "LREM",
    "SADD",
    "SREM",
    "XADD",
];

/// Why a script cannot be tokenized.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LexError {
    /// A string or long comment that never ends.
    #[error("unterminated {what} starting at byte {at}")]
    Unterminated {
        /// What is unterminated.
        what: &'static str,
        /// Its byte offset.
        at: usize,
    },
}

fn long_bracket_level(s: &[u8], at: usize) -> Option<usize> {
    // `[` `=`* `[` opens a long string or comment of that level.
    if s.get(at) != Some(&b'[') {
        return None;
    }
    let mut i = at + 1;
    while s.get(i) == Some(&b'=') {
        i += 1;
    }
    (s.get(i) == Some(&b'[')).then_some(i - at - 1)
}

fn long_bracket_end(src: &str, from: usize, level: usize) -> Option<usize> {
    let close = format!("]{}]", "=".repeat(level));
    src[from..].find(&close).map(|p| from + p + close.len())
}

fn tokenize(src: &str) -> Result<Vec<Token<'_>>, LexError> {
    let s = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'-' && s.get(i + 1) == Some(&b'-') {
            if let Some(level) = long_bracket_level(s, i + 2) {
                i = long_bracket_end(src, i + 2, level).ok_or(LexError::Unterminated {
                    what: "long comment",
                    at: i,
                })?;
            } else {
                i = src[i..].find('\n').map_or(s.len(), |p| i + p);
            }
            continue;
        }
        let start = i;
        let kind = if c == b'\'' || c == b'"' {
            i += 1;
            loop {
                match s.get(i) {
                    None | Some(b'\n') => {
                        return Err(LexError::Unterminated {
                            what: "string",
                            at: start,
                        })
                    }
                    Some(b'\\') => i += 2,
                    Some(&q) if q == c => {
                        i += 1;
                        break;
                    }
                    Some(_) => i += 1,
                }
            }
            Tok::Str
        } else if let Some(level) = long_bracket_level(s, i) {
            i = long_bracket_end(src, i, level).ok_or(LexError::Unterminated {
                what: "long string",
                at: i,
            })?;
            Tok::Str
        } else if c.is_ascii_digit() {
            while i < s.len() && (s[i].is_ascii_alphanumeric() || s[i] == b'.') {
                i += 1;
            }
            Tok::Number
        } else if c.is_ascii_alphabetic() || c == b'_' {
            while i < s.len() && (s[i].is_ascii_alphanumeric() || s[i] == b'_') {
                i += 1;
            }
            Tok::Name
        } else {
            let three = src.get(i..i + 3);
            let two = src.get(i..i + 2);
            if three == Some("...") {
                i += 3;
            } else if matches!(
                two,
                Some("==" | "~=" | "<=" | ">=" | ".." | "::" | "//" | "<<" | ">>")
            ) {
                i += 2;
            } else {
                // One character (multi-byte UTF-8 only ever occurs in strings
                // and comments of these scripts; step over the whole char).
                i += src[i..].chars().next().map_or(1, char::len_utf8);
            }
            Tok::Op
        };
        out.push(Token {
            kind,
            text: &src[start..i],
            start,
            end: i,
        });
    }
    Ok(out)
}

fn is_keyword(t: &Token<'_>) -> bool {
    t.kind == Tok::Name && KEYWORDS.contains(&t.text)
}

/// Whether a token ends an operand (so a following `-` is binary).
fn ends_operand(t: &Token<'_>) -> bool {
    match t.kind {
        Tok::Number | Tok::Str => true,
        Tok::Name => !is_keyword(t) || matches!(t.text, "true" | "false" | "nil"),
        Tok::Op => matches!(t.text, ")" | "]" | "}"),
    }
}

/// One edit of the source: bytes `start..end` replaced.
type Edit = (usize, usize, String);

struct Gen<'a> {
    src: &'a str,
    toks: Vec<Token<'a>>,
    out: Vec<(MutantKind, Vec<Edit>)>,
}

impl<'a> Gen<'a> {
    fn push(&mut self, kind: MutantKind, edits: Vec<Edit>) {
        self.out.push((kind, edits));
    }

    /// The index of the bracket closing the one at `open`.
    fn closing(&self, open: usize) -> Option<usize> {
        let mut depth = 0i32;
        for (k, t) in self.toks.iter().enumerate().skip(open) {
            if t.kind != Tok::Op {
                continue;
            }
            match t.text {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" | "}" => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(k);
                    }
                }
                _ => {}
            }
        }
        None
    }

    fn comparisons(&mut self) {
        for k in 0..self.toks.len() {
            let t = &self.toks[k];
            if t.kind != Tok::Op {
                continue;
            }
            // Loosened or tightened, then negated.
            let to: &[&str] = match t.text {
                "<" => &["<=", ">="],
                "<=" => &["<", ">"],
                ">" => &[">=", "<="],
                ">=" => &[">", "<"],
                "==" => &["~="],
                "~=" => &["=="],
                _ => continue,
            };
            let (s, e) = (t.start, t.end);
            for r in to {
                self.push(MutantKind::Comparison, vec![(s, e, r.to_string())]);
            }
        }
    }

    fn boundaries(&mut self) {
        for k in 1..self.toks.len().saturating_sub(1) {
            let (prev, op, one) = (&self.toks[k - 1], &self.toks[k], &self.toks[k + 1]);
            if op.kind != Tok::Op || !matches!(op.text, "+" | "-") {
                continue;
            }
            if one.kind != Tok::Number || one.text != "1" || !ends_operand(prev) {
                continue;
            }
            // `x + 1 * y`: the 1 belongs to a tighter operator; not a boundary.
            if let Some(next) = self.toks.get(k + 2) {
                if next.kind == Tok::Op && matches!(next.text, "*" | "/" | "%" | "^" | "//") {
                    continue;
                }
            }
            let flipped = if op.text == "+" { "-" } else { "+" };
            let (ps, os, oe, e) = (prev.end, op.start, op.end, one.end);
            self.push(MutantKind::Boundary, vec![(ps, e, String::new())]);
            self.push(MutantKind::Boundary, vec![(os, oe, flipped.to_string())]);
        }
    }

    /// Top-level operands of `toks[from..to]` split at `word`.
    fn split(&self, from: usize, to: usize, word: &str) -> Vec<(usize, usize)> {
        let mut parts = Vec::new();
        let mut depth = 0i32;
        let mut begin = from;
        for k in from..to {
            let t = &self.toks[k];
            match (t.kind, t.text) {
                (Tok::Op, "(" | "[" | "{") => depth += 1,
                (Tok::Op, ")" | "]" | "}") => depth -= 1,
                (Tok::Name, w) if depth == 0 && w == word => {
                    parts.push((begin, k));
                    begin = k + 1;
                }
                _ => {}
            }
        }
        parts.push((begin, to));
        parts
    }

    /// Mutants dropping each operand of the condition `toks[from..to]`, at
    /// every level of `or`/`and` and inside parentheses, and each `not`.
    fn operands(&mut self, from: usize, to: usize) {
        if from >= to {
            return;
        }
        for word in ["or", "and"] {
            let parts = self.split(from, to, word);
            if parts.len() < 2 {
                continue;
            }
            for (n, &(a, b)) in parts.iter().enumerate() {
                let (s, e) = if n == 0 {
                    (self.toks[a].start, self.toks[parts[1].0].start)
                } else {
                    (self.toks[parts[n - 1].1 - 1].end, self.toks[b - 1].end)
                };
                self.push(MutantKind::Condition, vec![(s, e, String::new())]);
            }
            for (a, b) in parts {
                self.operands(a, b);
            }
            return;
        }
        let first = &self.toks[from];
        if first.kind == Tok::Name && first.text == "not" && from + 1 < to {
            let (s, e) = (first.start, self.toks[from + 1].start);
            self.push(MutantKind::Condition, vec![(s, e, String::new())]);
            self.operands(from + 1, to);
            return;
        }
        if first.kind == Tok::Op && first.text == "(" && self.closing(from) == Some(to - 1) {
            self.operands(from + 1, to - 1);
        }
    }

    fn conditions(&mut self) {
        for k in 0..self.toks.len() {
            let t = &self.toks[k];
            if t.kind != Tok::Name {
                continue;
            }
            let stop = match t.text {
                "if" | "elseif" => "then",
                "while" => "do",
                "local" => {
                    self.local_condition(k);
                    continue;
                }
                _ => continue,
            };
            let Some(end) = (k + 1..self.toks.len())
                .find(|&j| self.toks[j].kind == Tok::Name && self.toks[j].text == stop)
            else {
                continue;
            };
            if end == k + 1 {
                continue;
            }
            let (s, e) = (self.toks[k + 1].start, self.toks[end - 1].end);
            let whole = &self.src[s..e];
            for lit in ["true", "false"] {
                if whole != lit {
                    self.push(MutantKind::Condition, vec![(s, e, lit.to_string())]);
                }
            }
            self.operands(k + 1, end);
        }
    }

    /// `local x = A and B` (a condition kept in a variable): its operands,
    /// the expression taken to the end of its line.
    fn local_condition(&mut self, at: usize) {
        let Some(eq) = (at + 1..self.toks.len())
            .take_while(|&j| self.toks[j].kind == Tok::Name || self.toks[j].text == ",")
            .last()
            .map(|j| j + 1)
        else {
            return;
        };
        if self.toks.get(eq).map(|t| t.text) != Some("=") {
            return;
        }
        let line_end = self.src[self.toks[eq].end..]
            .find('\n')
            .map_or(self.src.len(), |p| self.toks[eq].end + p);
        let end = (eq + 1..self.toks.len())
            .find(|&j| self.toks[j].start >= line_end)
            .unwrap_or(self.toks.len());
        let has = |w: &str| self.split(eq + 1, end, w).len() > 1;
        if end > eq + 1 && (has("or") || has("and")) {
            self.operands(eq + 1, end);
        }
    }

    /// `redis.call('CMD', …)` calls: (index of `redis`, command, index of `(`,
    /// index of the closing `)`).
    fn redis_calls(&self) -> Vec<(usize, String, usize, usize)> {
        let mut calls = Vec::new();
        for k in 0..self.toks.len().saturating_sub(4) {
            let w = &self.toks[k..k + 5];
            if w[0].text == "redis"
                && w[1].text == "."
                && matches!(w[2].text, "call" | "pcall")
                && w[3].text == "("
                && w[4].kind == Tok::Str
            {
                let cmd = w[4].text[1..w[4].text.len() - 1].to_ascii_uppercase();
                if let Some(close) = self.closing(k + 3) {
                    calls.push((k, cmd, k + 3, close));
                }
            }
        }
        calls
    }

    fn writes(&mut self) {
        for (k, cmd, open, close) in self.redis_calls() {
            if !WRITES.contains(&cmd.as_str()) {
                continue;
            }
            let statement = k == 0 || {
                let p = &self.toks[k - 1];
                ends_operand(p) || matches!(p.text, "then" | "do" | "else" | "end")
            };
            let (s, e) = (self.toks[k].start, self.toks[close].end);
            if statement {
                self.push(MutantKind::WriteRemoved, vec![(s, e, String::new())]);
            } else if cmd == "INCR" {
                // The counter's next value computed but never stored.
                let args_from = self.toks[open + 2].end;
                let args = self.src[args_from..self.toks[close].start]
                    .trim_start_matches([',', ' '])
                    .to_string();
                let read = format!("((tonumber(redis.call('GET', {args})) or 0) + 1)");
                self.push(MutantKind::WriteRemoved, vec![(s, e, read)]);
            }
        }
    }

    fn is_key_or_arg(&self, (a, b): (usize, usize)) -> bool {
        b == a + 4
            && matches!(self.toks[a].text, "KEYS" | "ARGV")
            && self.toks[a + 1].text == "["
            && self.toks[a + 2].kind == Tok::Number
            && self.toks[a + 3].text == "]"
    }

    fn is_atom(&self, (a, b): (usize, usize)) -> bool {
        self.is_key_or_arg((a, b))
            || (b == a + 1 && self.toks[a].kind == Tok::Name && !is_keyword(&self.toks[a]))
    }

    fn swaps(&mut self) {
        for open in 1..self.toks.len() {
            let (prev, t) = (&self.toks[open - 1], &self.toks[open]);
            if t.text != "(" || prev.kind != Tok::Name || is_keyword(prev) {
                continue;
            }
            let Some(close) = self.closing(open) else {
                continue;
            };
            let args: Vec<(usize, usize)> = self
                .split_commas(open + 1, close)
                .into_iter()
                .filter(|&(a, b)| b > a)
                .collect();
            for i in 0..args.len() {
                for j in i + 1..args.len() {
                    let (x, y) = (args[i], args[j]);
                    if !(self.is_atom(x) && self.is_atom(y)) {
                        continue;
                    }
                    if !(self.is_key_or_arg(x) || self.is_key_or_arg(y)) {
                        continue;
                    }
                    let span = |(a, b): (usize, usize)| (self.toks[a].start, self.toks[b - 1].end);
                    let ((xs, xe), (ys, ye)) = (span(x), span(y));
                    let (xt, yt) = (&self.src[xs..xe], &self.src[ys..ye]);
                    if xt == yt {
                        continue;
                    }
                    let edits = vec![(xs, xe, yt.to_string()), (ys, ye, xt.to_string())];
                    self.push(MutantKind::ArgsSwapped, edits);
                }
            }
        }
    }

    fn split_commas(&self, from: usize, to: usize) -> Vec<(usize, usize)> {
        let mut parts = Vec::new();
        let mut depth = 0i32;
        let mut begin = from;
        for k in from..to {
            match self.toks[k].text {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" | "}" => depth -= 1,
                "," if depth == 0 => {
                    parts.push((begin, k));
                    begin = k + 1;
                }
                _ => {}
            }
        }
        parts.push((begin, to));
        parts
    }
}

fn apply(src: &str, edits: &[Edit]) -> String {
    let mut sorted = edits.to_vec();
    sorted.sort_by_key(|e| std::cmp::Reverse(e.0));
    let mut out = src.to_string();
    for (s, e, r) in sorted {
        out.replace_range(s..e, &r);
    }
    out
}

/// FNV-1a, 64 bits: a stable id with no dependency (std's hasher is not
/// stable across releases).
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Every mutant of `body` (a script's own file, no shared prefix), each one
/// change, deduplicated by the text it produces, in source order. Guarantees
/// no mutant equals the original and no comment or string is changed.
pub fn mutants(script: &str, body: &str) -> Result<Vec<Mutant>, LexError> {
    let toks = tokenize(body)?;
    let mut g = Gen {
        src: body,
        toks,
        out: Vec::new(),
    };
    g.comparisons();
    g.boundaries();
    g.conditions();
    g.writes();
    g.swaps();
    let mut raw = std::mem::take(&mut g.out);
    raw.sort_by_key(|(kind, edits)| (edits.iter().map(|e| e.0).min(), *kind));
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for (kind, edits) in raw {
        let mutated = apply(body, &edits);
        if mutated == body || !seen.insert(mutated.clone()) {
            continue;
        }
        let lo = edits.iter().map(|e| e.0).min().unwrap_or(0);
        let hi = edits.iter().map(|e| e.1).max().unwrap_or(0);
        let line_start = body[..lo].rfind('\n').map_or(0, |p| p + 1);
        let line_end = body[hi..].find('\n').map_or(body.len(), |p| hi + p);
        let before = body[line_start..line_end].to_string();
        let shifted: Vec<Edit> = edits
            .iter()
            .map(|(s, e, r)| (s - line_start, e - line_start, r.clone()))
            .collect();
        let after = apply(&before, &shifted);
        let mut key = script.as_bytes().to_vec();
        key.push(0);
        key.extend_from_slice(mutated.as_bytes());
        out.push(Mutant {
            id: format!("{:016x}", fnv(&key)),
            script: script.to_string(),
            line: body[..lo].matches('\n').count() + 1,
            kind,
            before,
            after,
            body: mutated,
        });
    }
    Ok(out)
}

/// `items` in an order drawn from `seed` (Fisher–Yates on splitmix64):
/// the same seed always gives the same order.
pub fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut state = seed;
    let mut next = || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    for i in (1..items.len()).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn afters(ms: &[Mutant], kind: MutantKind) -> Vec<String> {
        ms.iter()
            .filter(|m| m.kind == kind)
            .map(|m| m.after.trim().to_string())
            .collect()
    }

    #[test]
    fn comments_and_strings_are_never_mutated() {
        let src = "-- if a < b then x = x + 1 end\nlocal s = 'a < b and c'\n--[[ a == b ]]\n";
        assert_eq!(mutants("x.lua", src).unwrap(), vec![]);
    }

    #[test]
    fn each_comparison_is_loosened_and_negated() {
        let ms = mutants("x.lua", "if a < b then return 1 end\n").unwrap();
        let cmp = afters(&ms, MutantKind::Comparison);
        assert_eq!(
            cmp,
            ["if a <= b then return 1 end", "if a >= b then return 1 end"]
        );
        let cond = afters(&ms, MutantKind::Condition);
        assert_eq!(
            cond,
            ["if true then return 1 end", "if false then return 1 end"]
        );
    }

    #[test]
    fn boundaries_are_dropped_and_flipped_but_not_unary_or_other_numbers() {
        let ms = mutants("x.lua", "local a = b + 1\nlocal c = -1\nlocal d = e - 2\n").unwrap();
        assert_eq!(
            afters(&ms, MutantKind::Boundary),
            ["local a = b", "local a = b - 1"]
        );
        assert_eq!(ms.len(), 2);
    }

    #[test]
    fn each_operand_of_a_condition_is_dropped_at_every_level() {
        let src = "if a and (b or c) then\n  x()\nend\n";
        let ms = mutants("x.lua", src).unwrap();
        let cond = afters(&ms, MutantKind::Condition);
        for want in [
            "if true then",
            "if false then",
            "if (b or c) then",
            "if a then",
            "if a and (c) then",
            "if a and (b) then",
        ] {
            assert!(cond.contains(&want.to_string()), "{want} in {cond:?}");
        }
        assert_eq!(cond.len(), 6);
    }

    #[test]
    fn write_statements_are_removed_and_a_used_incr_is_left_unwritten() {
        let src = "local v = redis.call('GET', KEYS[1])\nredis.call('HSET', KEYS[1],\n  'a', v)\nlocal n = redis.call('INCR', KEYS[2])\n";
        let ms = mutants("x.lua", src).unwrap();
        let w: Vec<&Mutant> = ms
            .iter()
            .filter(|m| m.kind == MutantKind::WriteRemoved)
            .collect();
        assert_eq!(w.len(), 2, "{w:?}");
        assert_eq!(w[0].line, 2);
        assert_eq!(w[0].before, "redis.call('HSET', KEYS[1],\n  'a', v)");
        assert_eq!(w[0].after, "");
        assert_eq!(
            w[1].after,
            "local n = ((tonumber(redis.call('GET', KEYS[2])) or 0) + 1)"
        );
    }

    #[test]
    fn arguments_are_swapped_only_when_one_is_a_key_or_argument() {
        let src = "redis.call('ZADD', KEYS[1], ARGV[1], id)\nf(a, b)\n";
        let ms = mutants("x.lua", src).unwrap();
        let s = afters(&ms, MutantKind::ArgsSwapped);
        assert_eq!(
            s,
            [
                "redis.call('ZADD', ARGV[1], KEYS[1], id)",
                "redis.call('ZADD', id, ARGV[1], KEYS[1])",
                "redis.call('ZADD', KEYS[1], id, ARGV[1])",
            ]
        );
    }

    #[test]
    fn every_mutant_is_one_change_and_unique_and_the_order_is_seeded() {
        let body = include_str!("../../stores/lua/lease_take.lua");
        let ms = mutants("lease_take.lua", body).unwrap();
        assert!(ms.len() > 10);
        let ids: BTreeSet<&str> = ms.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids.len(), ms.len());
        for m in &ms {
            // Putting the changed lines back gives the original file.
            if m.after.is_empty() {
                assert!(m.body.len() < body.len(), "{m:?}");
            } else {
                assert_eq!(m.body.replacen(&m.after, &m.before, 1), body, "{m:?}");
            }
            assert_ne!(m.body, body);
        }
        let mut a: Vec<usize> = (0..50).collect();
        let mut b = a.clone();
        shuffle(&mut a, 7);
        shuffle(&mut b, 7);
        assert_eq!(a, b);
        let mut c: Vec<usize> = (0..50).collect();
        shuffle(&mut c, 8);
        assert_ne!(a, c);
    }
}

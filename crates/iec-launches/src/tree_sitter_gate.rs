//! Gemini CLI's parse gate (0.11 to 0.27 in a session that approves every call; 0.28 on let an
//! unparsable text run then): before a
//! shell command runs, `parseBashCommandDetails` (`utils/shell-utils.js`) parses the model's text
//! with tree-sitter-bash (npm `tree-sitter-bash` ^0.25.0 under `web-tree-sitter` ^0.25.10, which
//! install as 0.25.1 and 0.25.10) and the harness refuses the call when the tree has an error or
//! a missing node, when it names no command, or (0.13 on) when an expansion applies the `@P`
//! prompt transform. 0.11–0.23 refuse with "Command rejected because it could not be parsed
//! safely" (`checkCommandPermissions`), 0.24 on through the policy engine ("Tool execution …
//! denied by policy"). 0.26–0.27 (see [`Gate::parts`]) also count redirections as parts and gate
//! every part again on its own text. The same grammar and runtime versions are linked here, so the gate is the
//! harness's own parser, not a model of it; `tests/tree_sitter_gate.rs` compares it with the
//! npm packages under node on every text of the test corpora.

/// Why the gate refuses a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateFinding {
    /// The text is empty after JavaScript's `trim()`.
    Empty,
    /// The tree has an `ERROR` or `MISSING` node; the byte offset of the first.
    SyntaxError(usize),
    /// No node the harness counts as a command (`x=1` alone, a lone comment).
    NoCommand,
    /// `${var@P}`: an expansion with the prompt transform; the byte offset of the `@`.
    PromptTransform(usize),
    /// ([`Gate::parts`]) a part of the text (a command or redirection), gated on its own text,
    /// is refused: the byte offset of the part.
    Part(usize),
}

/// Which gate a Gemini CLI version has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Gate {
    /// `${var@P}` is refused (0.13 on).
    pub prompt_transform: bool,
    /// 0.26–0.27's policy engine: redirections (`file_redirect`, `heredoc_redirect`,
    /// `herestring_redirect`) are parts as commands are (so `> f` alone names one), and each
    /// part's text, trimmed, that is not the whole text is gated again (`checkShellCommand`
    /// calls `check` on every sub-command): a here-document's `<<EOF…EOF` alone does not
    /// parse, so every here-document is refused.
    pub parts: bool,
}

impl GateFinding {
    /// The byte offset the finding points at.
    pub fn offset(self) -> usize {
        match self {
            Self::Empty | Self::NoCommand => 0,
            Self::SyntaxError(o) | Self::PromptTransform(o) | Self::Part(o) => o,
        }
    }

    /// A short rule name for reports.
    pub fn rule(self) -> &'static str {
        match self {
            Self::Empty => "tree-sitter-empty",
            Self::SyntaxError(_) => "tree-sitter-error",
            Self::NoCommand => "tree-sitter-no-command",
            Self::PromptTransform(_) => "tree-sitter-prompt-transform",
            Self::Part(_) => "tree-sitter-part",
        }
    }
}

/// The UTF-16 code units web-tree-sitter gives the parser at a time (found by red team: a
/// letter of two units across the 5,119th changed what the real harness refused).
pub const CHUNK_UNITS: usize = 5119;

/// One chunk of the text as web-tree-sitter's `stringToUTF16` leaves it: a buffer of its own
/// whose unit after the chunk is 0. tree-sitter's UTF-16 decoder takes the bytes left in a
/// chunk for units left and reads one unit past a lone lead surrogate at the chunk's end: there
/// it reads the 0, so the lead stands alone; a slice of the whole text would give it the trail.
struct Chunk(Vec<u16>);

impl Chunk {
    fn of(units: &[u16]) -> Chunk {
        let mut v = Vec::with_capacity(units.len() + 1);
        v.extend_from_slice(units);
        v.push(0);
        Chunk(v)
    }
}

impl AsRef<[u16]> for Chunk {
    fn as_ref(&self) -> &[u16] {
        &self.0[..self.0.len() - 1]
    }
}

/// A text as UTF-16 code units, with the way back to UTF-8 byte offsets.
struct Utf16 {
    units: Vec<u16>,
    /// The UTF-8 byte offset of each code unit (a surrogate pair's two units share one).
    to_byte: Vec<usize>,
}

impl Utf16 {
    fn new(text: &str) -> Self {
        let (mut units, mut to_byte) = (Vec::new(), Vec::new());
        let mut buf = [0u16; 2];
        for (at, c) in text.char_indices() {
            for u in c.encode_utf16(&mut buf) {
                units.push(*u);
                to_byte.push(at);
            }
        }
        to_byte.push(text.len());
        Self { units, to_byte }
    }

    /// The text of a node (tree-sitter gives UTF-16 offsets in bytes).
    fn text(&self, node: tree_sitter::Node) -> String {
        String::from_utf16_lossy(&self.units[node.start_byte() / 2..node.end_byte() / 2])
    }

    /// The UTF-8 byte range of a node.
    fn byte_range(&self, node: tree_sitter::Node) -> std::ops::Range<usize> {
        self.byte_offset(node.start_byte())..self.byte_offset(node.end_byte())
    }

    /// The UTF-8 byte offset of a UTF-16 byte offset.
    fn byte_offset(&self, utf16_bytes: usize) -> usize {
        self.to_byte[(utf16_bytes / 2).min(self.to_byte.len() - 1)]
    }
}

/// What the harness's parser reads in a text: the facts its gate decides on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateView {
    /// Empty after JavaScript's `trim()` (the text is not parsed).
    pub empty: bool,
    /// `rootNode.hasError`; the byte offset of the first `ERROR` or `MISSING` node.
    pub error: Option<usize>,
    /// The commands `collectCommandDetails` counts (a non-empty name each).
    pub commands: usize,
    /// The redirections 0.26–0.27 count as parts too.
    pub redirects: usize,
    /// The UTF-8 byte ranges of the parts (commands, then as found, redirections).
    pub parts: Vec<std::ops::Range<usize>>,
    /// The byte offset of the first `@P` (or `@p`) prompt transform, if any.
    pub prompt_transform: Option<usize>,
}

/// Parses `text` as the harness does and reports what its gate looks at.
pub fn inspect(text: &str) -> GateView {
    let mut view = GateView {
        empty: text.trim_matches(crate::render::is_js_whitespace).is_empty(),
        error: None,
        commands: 0,
        redirects: 0,
        parts: Vec::new(),
        prompt_transform: None,
    };
    if view.empty {
        return view;
    }
    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&iec_tree_sitter_bash::language())
        .expect("the linked tree-sitter-bash grammar matches the linked runtime");
    // web-tree-sitter parses the JavaScript string as UTF-16, and error recovery weighs what it
    // skips in bytes of that encoding: the gate parses the same units.
    let src = Utf16::new(text);
    // web-tree-sitter hands the parser the text in chunks of at most [`CHUNK_UNITS`] (its
    // `tree_sitter_parse_callback` copies into a 10,240-byte buffer, clamped to 10,238 bytes): a
    // surrogate pair across a chunk's end reaches the scanner as two lone halves, which are not
    // letters. The gate reads the same chunks, each in a buffer of its own followed by a 0 unit
    // as there ([`Chunk`]). The harness refuses when `parser.parse` gives nothing; so does the
    // gate.
    let units = &src.units;
    let mut chunk = |i: usize, _| Chunk::of(&units[i.min(units.len())..(i + CHUNK_UNITS).min(units.len())]);
    let Some(tree) = parser.parse_utf16_le_with_options(&mut chunk, None, None) else {
        view.error = Some(0);
        return view;
    };
    let root = tree.root_node();
    if root.has_error() {
        view.error = Some(src.byte_offset(first_error(root).unwrap_or(0)));
    }
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if command_name(node, &src).is_some_and(|n| !n.is_empty()) {
            view.commands += 1;
            view.parts.push(src.byte_range(node));
        } else if matches!(
            node.kind(),
            "file_redirect" | "heredoc_redirect" | "herestring_redirect"
        ) {
            view.redirects += 1;
            view.parts.push(src.byte_range(node));
        }
        if view.prompt_transform.is_none() && node.kind() == "expansion" {
            view.prompt_transform = prompt_transform_at(node, &src).map(|at| src.byte_offset(at));
        }
        let mut cursor = node.walk();
        let children: Vec<_> = node.named_children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
    }
    view
}

/// Whether Gemini CLI's gate refuses `text`; `prompt_transform` says whether the version
/// refuses `@P` too (0.13 on).
pub fn refuses(text: &str, prompt_transform: bool) -> Option<GateFinding> {
    refuses_with(
        text,
        Gate {
            prompt_transform,
            parts: false,
        },
    )
}

/// Whether the gate `gate` refuses `text` (the parts gate without a bound on its work: see
/// [`decide`]).
pub fn refuses_with(text: &str, gate: Gate) -> Option<GateFinding> {
    let mut unbounded = usize::MAX;
    gated(text, gate, &mut std::collections::HashMap::new(), &mut unbounded)
}

/// Texts longer than this may take the harness's parse more than its 1 s (`parseCommandTree`'s
/// `PARSE_TIMEOUT_MICROS`), after which it refuses the call: web-tree-sitter under node parsed
/// 1 MB of bash in 0.3–0.5 s and 4 MB in 1.1–1.9 s on the machine this was measured on, and a
/// slower machine reaches the second sooner. Above it a text the gate lets through is
/// undecided.
pub const TIMEOUT_RISK_BYTES: usize = 128 << 10;

/// The bytes the parts gate parses at most for one text, its parts' texts included, beyond the
/// text itself: nested `$(…)` make it depth × length (the harness, gating every part anew, takes
/// time exponential in the nesting and never answers such a text).
pub const PARTS_WORK_BYTES: usize = 16 << 20;

/// What the gate does with a text, within bounded work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The harness refuses it.
    Refuses(GateFinding),
    /// The harness lets it through.
    Runs,
    /// Not known: the text may take the harness's parse over its time limit
    /// ([`TIMEOUT_RISK_BYTES`]), or its parts take more than [`PARTS_WORK_BYTES`] to decide.
    Undecided(Undecided),
}

/// Why a [`Decision`] is undecided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Undecided {
    /// The text is longer than [`TIMEOUT_RISK_BYTES`].
    TimeoutRisk,
    /// The parts gate would parse more than [`PARTS_WORK_BYTES`].
    PartsWork,
}

impl Undecided {
    /// A short rule name for reports.
    pub fn rule(self) -> &'static str {
        match self {
            Self::TimeoutRisk => "tree-sitter-timeout-risk",
            Self::PartsWork => "tree-sitter-parts-work",
        }
    }
}

/// What the gate `gate` does with `text`, within bounded work: a certain refusal stays certain
/// (a parse that times out refuses too), a pass is certain only for a text the harness parses
/// within its time limit and whose parts were all decided.
pub fn decide(text: &str, gate: Gate) -> Decision {
    // A check asks twice (certain refusal, then possible one): the last answer is kept.
    thread_local! {
        static LAST: std::cell::RefCell<Option<(u64, usize, Gate, Decision)>> = const { std::cell::RefCell::new(None) };
    }
    let key = {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut h);
        h.finish()
    };
    if let Some(d) = LAST.with_borrow(|l| {
        l.filter(|l| (l.0, l.1, l.2) == (key, text.len(), gate))
            .map(|l| l.3)
    }) {
        return d;
    }
    let d = decide_uncached(text, gate);
    LAST.with_borrow_mut(|l| *l = Some((key, text.len(), gate, d)));
    d
}

fn decide_uncached(text: &str, gate: Gate) -> Decision {
    let mut budget = PARTS_WORK_BYTES;
    match gated(text, gate, &mut std::collections::HashMap::new(), &mut budget) {
        Some(f) => Decision::Refuses(f),
        None if budget == 0 => Decision::Undecided(Undecided::PartsWork),
        None if text.len() > TIMEOUT_RISK_BYTES => Decision::Undecided(Undecided::TimeoutRisk),
        None => Decision::Runs,
    }
}

/// [`refuses_with`], each part's text decided once: a part of a part is a part of the text too
/// (nested `$(…)`), and gating each anew, as the harness does, takes time exponential in the
/// nesting (a 4 KB text of 500 nested `$(echo …)` did not finish in 2 minutes).
///
/// `budget` is the bytes of parts' texts still to parse; when a part would take more, it is
/// set to 0 and the parts left undecided (no refusal found among those decided).
fn gated<'t>(
    text: &'t str,
    gate: Gate,
    seen: &mut std::collections::HashMap<&'t str, bool>,
    budget: &mut usize,
) -> Option<GateFinding> {
    let view = inspect(text);
    if view.empty {
        return Some(GateFinding::Empty);
    }
    if let Some(at) = view.error {
        return Some(GateFinding::SyntaxError(at));
    }
    let named = view.commands + if gate.parts { view.redirects } else { 0 };
    if named == 0 {
        return Some(GateFinding::NoCommand);
    }
    if let Some(at) = view.prompt_transform.filter(|_| gate.prompt_transform) {
        return Some(GateFinding::PromptTransform(at));
    }
    if !gate.parts {
        return None;
    }
    // `splitCommands` gives each part's text trimmed; a part that is the whole text is not
    // checked again (the harness's guard against endless recursion).
    view.parts.iter().find_map(|r| {
        let part = text[r.clone()].trim_matches(crate::render::is_js_whitespace);
        if part.is_empty() || part == text {
            return None;
        }
        let refused = match seen.get(part) {
            Some(&refused) => refused,
            None if *budget < part.len() => {
                *budget = 0;
                return None;
            }
            None => {
                *budget -= part.len();
                let refused = gated(part, gate, seen, budget).is_some();
                if *budget == 0 && !refused {
                    // Undecided below: not remembered as passing.
                    return None;
                }
                seen.insert(part, refused);
                refused
            }
        };
        refused.then_some(GateFinding::Part(r.start))
    })
}

/// The start byte of the first `ERROR` or `MISSING` node, in document order (a walk without
/// recursion: generated texts nest deeply).
fn first_error(root: tree_sitter::Node) -> Option<usize> {
    let mut node = root;
    loop {
        if node.is_error() || node.is_missing() {
            return Some(node.start_byte());
        }
        let mut cursor = node.walk();
        let next = node.children(&mut cursor).find(|c| c.has_error());
        node = next?;
    }
}

/// `extractNameFromNode`: the command name the harness reads from a `command` (its `name`
/// field) or from the first child of a declaration, `unset` or test command, normalised.
fn command_name(node: tree_sitter::Node, src: &Utf16) -> Option<String> {
    let raw = match node.kind() {
        "command" => node.child_by_field_name("name")?,
        "declaration_command" | "unset_command" | "test_command" => node.child(0)?,
        _ => return None,
    };
    Some(normalize_command_name(&src.text(raw)))
}

/// `normalizeCommandName`: quotes of the same kind at both ends removed, else the last part
/// after `/` or `\` of the trimmed text.
fn normalize_command_name(raw: &str) -> String {
    let units = raw.encode_utf16().count();
    if units >= 2 {
        let (first, last) = (raw.chars().next(), raw.chars().last());
        if first == last && matches!(first, Some('"' | '\'')) {
            return raw[1..raw.len() - 1].to_string();
        }
    }
    let trimmed = raw.trim_matches(crate::render::is_js_whitespace);
    trimmed.rsplit(['/', '\\']).next().unwrap_or(trimmed).to_string()
}

/// `hasPromptCommandTransform` for one `expansion` node: a child `@` followed by a child whose
/// text is `P` or `p`; the byte offset of the `@`.
fn prompt_transform_at(node: tree_sitter::Node, src: &Utf16) -> Option<usize> {
    let mut cursor = node.walk();
    let children: Vec<_> = node.children(&mut cursor).collect();
    children.windows(2).find_map(|w| {
        let (op, tr) = (src.text(w[0]), src.text(w[1]));
        (op == "@" && tr.eq_ignore_ascii_case("p")).then(|| w[0].start_byte())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailing_backslash_after_a_wrapper_is_a_syntax_error() {
        let f = refuses("bash -c 'argvprobe X \"$0\"' \\", false);
        assert!(matches!(f, Some(GateFinding::SyntaxError(_))), "{f:?}");
    }

    #[test]
    fn an_assignment_alone_names_no_command() {
        assert_eq!(refuses("x=1", false), Some(GateFinding::NoCommand));
        assert_eq!(refuses(" \t\n", false), Some(GateFinding::Empty));
        assert_eq!(refuses("echo hi", false), None);
    }

    #[test]
    fn gemini_0_26_gates_each_here_document_on_its_own() {
        let parts = Gate {
            prompt_transform: true,
            parts: true,
        };
        let heredoc = "cat <<EOF\nbody\nEOF";
        assert_eq!(refuses(heredoc, true), None);
        assert_eq!(refuses_with(heredoc, parts), Some(GateFinding::Part(4)));
        // A redirection is a part of its own: `> f` alone names one.
        assert_eq!(refuses(">f", true), Some(GateFinding::NoCommand));
        assert_eq!(refuses_with(">f", parts), None);
        assert_eq!(refuses_with("argvprobe x 2>&1 | cat", parts), None);
        assert_eq!(refuses_with("cat <<< 'x'", parts), None);
    }

    #[test]
    fn nested_substitutions_are_gated_once_each() {
        // 60 nested `$(echo …)`: gating every part anew would take 2^60 parses.
        let t = format!("echo {}x{}", "$(echo ".repeat(60), ")".repeat(60));
        let parts = Gate {
            prompt_transform: true,
            parts: true,
        };
        assert_eq!(refuses_with(&t, parts), None);
        let broken = format!("echo {}x{}", "$(echo ".repeat(60), ")".repeat(59));
        assert!(refuses_with(&broken, parts).is_some());
    }

    #[test]
    fn deep_nesting_past_the_parts_work_bound_is_undecided() {
        let parts = Gate {
            prompt_transform: true,
            parts: true,
        };
        // 2,500 nested `$(echo …)` (20 KB): its parts are 25 MB of text to parse.
        let deep = format!("echo {}x{}", "$(echo ".repeat(2500), ")".repeat(2500));
        assert_eq!(decide(&deep, parts), Decision::Undecided(Undecided::PartsWork));
        // A refusal is certain however deep: the text itself does not parse.
        let broken = format!("echo {}x{}", "$(echo ".repeat(2500), ")".repeat(2499));
        assert!(matches!(
            decide(&broken, parts),
            Decision::Refuses(GateFinding::SyntaxError(_))
        ));
        // Without the parts rule the text is gated once.
        assert_eq!(decide(&deep, Gate::default()), Decision::Runs);
    }

    #[test]
    fn a_text_the_harness_may_parse_past_its_time_limit_is_undecided() {
        let long = "echo hello world; ".repeat(TIMEOUT_RISK_BYTES / 18 + 1);
        assert!(long.len() > TIMEOUT_RISK_BYTES);
        assert_eq!(
            decide(&long, Gate::default()),
            Decision::Undecided(Undecided::TimeoutRisk)
        );
        assert_eq!(
            decide(&long[..TIMEOUT_RISK_BYTES - 18], Gate::default()),
            Decision::Runs
        );
        // A refusal stays certain: a parse that times out refuses too.
        let broken = format!("{long} (");
        assert!(matches!(decide(&broken, Gate::default()), Decision::Refuses(_)));
    }

    #[test]
    fn the_prompt_transform_is_refused_only_where_the_version_does() {
        let t = "argvprobe a; false && argvprobe \"${x@P}\"";
        assert_eq!(refuses(t, false), None);
        assert_eq!(
            refuses(t, true),
            Some(GateFinding::PromptTransform(t.find('@').unwrap()))
        );
    }
}

//! IEC-Bench's behaviour: the data files' counts, the control path, a known hazard lost and
//! recovered, the McNemar test, and errors that name the file and line.

use iec_bench::chain::{self, Functions};
use iec_bench::replay::{metrics, ItemResult, Report, Runner};
use iec_bench::stats::mcnemar_exact;
use iec_bench::{data, Suite};
use iec_launches::Catalog;

/// Items in a JSON Lines data file, counted without the crate's reader.
fn lines(name: &str) -> usize {
    let text = std::fs::read_to_string(data::builtin_dir().join(name)).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .count()
}

#[test]
fn the_data_files_hold_the_counts_the_suite_reads() {
    let s = Suite::builtin().unwrap();
    assert_eq!(s.pairs.len(), lines("pairs.jsonl"));
    assert_eq!(s.chains.len(), lines("chains.jsonl"));
    assert_eq!(s.tasks.len(), lines("tasks.jsonl"));
    assert_eq!((s.pairs.len(), s.chains.len(), s.tasks.len()), (75, 140, 51));
    assert!(s
        .chains
        .iter()
        .all(|c| (3..=7).contains(&c.steps.len()) && c.replayable()));
    // Every chain step after the first takes the previous step's output.
    for c in &s.chains {
        for (i, st) in c.steps.iter().enumerate().skip(1) {
            let k = st.from_previous.as_ref().unwrap();
            assert_eq!(&st.arguments[k], &c.outputs[i - 1], "{}", c.id);
        }
        assert_eq!(c.outputs.last().unwrap(), &c.answer);
    }
    assert!(s.pairs.iter().chain([]).all(|p| !p.source.is_empty()));
}

#[test]
fn on_the_control_path_nothing_is_lost_and_no_call_changes() {
    let s = Suite::builtin().unwrap();
    let cat = Catalog::builtin();
    let rep = Runner::new(&cat, &["bash-c"]).unwrap().run(&s, 2).unwrap();
    let m = &rep.paths["bash-c"];
    assert_eq!(m.items, 75 + 140 + 51);
    let failing: Vec<String> = rep
        .items
        .iter()
        .filter(|r| !r.off.pass || !r.on.pass || !r.control_pass)
        .map(|r| format!("{} {:?}", r.id, r))
        .collect();
    assert!(failing.is_empty(), "{failing:#?}");
    assert_eq!((m.lost, m.changed_calls, m.false_repairs), (0, 0, 0));
    assert_eq!(m.mcnemar_p, 1.0);
}

/// The suite on bash-c and Claude Code 2.1.72, and its one item's result on 2.1.72.
fn on_bash_c_and_2_1_72(s: &Suite) -> (Report, ItemResult) {
    let cat = Catalog::builtin();
    let rep = Runner::new(&cat, &["bash-c", "claude-code-2.1.72-linux"])
        .unwrap()
        .run(s, 1)
        .unwrap();
    let r = rep
        .items
        .iter()
        .find(|r| r.path == "claude-code-2.1.72-linux")
        .unwrap()
        .clone();
    (rep, r)
}

#[test]
fn a_bang_in_quotes_is_lost_on_claude_code_2_1_72_and_recovered_by_intact() {
    let mut s = Suite::builtin().unwrap();
    s.pairs.retain(|p| p.id == "bang-in-single-quotes-1");
    assert_eq!(s.pairs[0].hazard, "printf '%s\\n' 'a != b' > out.txt");
    s.chains.clear();
    s.tasks.clear();
    let (rep, r) = on_bash_c_and_2_1_72(&s);
    assert!(
        !r.off.pass,
        "the hazard's file must differ when run through 2.1.72's wrapper"
    );
    assert_eq!(r.off.changed, 1);
    assert!(r.control_pass && r.control_changed == 0);
    assert!(r.on.pass && r.on.repaired == 1 && r.on.refused == 0);
    assert!(r.lost() && r.recovered() && !r.false_repair());
    let m = &rep.paths["claude-code-2.1.72-linux"];
    assert_eq!(
        (m.lost, m.lost_changed, m.recovered_changed, m.false_repairs),
        (1, 1, 1, 0)
    );
    assert_eq!(m.recovery_rate, Some(1.0));
    // One discordant item: p = 2 · ½ = 1.
    assert_eq!(m.mcnemar_p, 1.0);
    let c = &rep.paths["bash-c"];
    assert_eq!((c.lost, c.changed_calls), (0, 0));
}

#[test]
fn mcnemar_exact_matches_hand_computed_values() {
    assert_eq!(mcnemar_exact(0, 0), 1.0);
    assert_eq!(mcnemar_exact(1, 0), 1.0);
    // 5 vs 0: 2 · (1/32).
    assert!((mcnemar_exact(5, 0) - 0.0625).abs() < 1e-12);
    assert!((mcnemar_exact(0, 5) - 0.0625).abs() < 1e-12);
    // 3 vs 7: 2 · (C(10,0)+C(10,1)+C(10,2)+C(10,3)) / 1024 = 2 · 176 / 1024.
    assert!((mcnemar_exact(3, 7) - 0.34375).abs() < 1e-12);
    // 137 vs 0 (large n stays finite): 2 / 2^137.
    let p = mcnemar_exact(137, 0);
    assert!(p > 0.0 && (p / 2f64.powi(-136) - 1.0).abs() < 1e-9, "{p}");
    assert_eq!(metrics(&[]).mcnemar_p, 1.0);
}

fn write_suite(dir: &std::path::Path, pairs: &str, chains: &str, tasks: &str) {
    std::fs::write(dir.join("pairs.jsonl"), pairs).unwrap();
    std::fs::write(dir.join("chains.jsonl"), chains).unwrap();
    std::fs::write(dir.join("tasks.jsonl"), tasks).unwrap();
}

const GOOD_PAIR: &str = r#"{"id":"p1","family":"f","source":"s","contract":"shell-string","intent":"i","hazard":"echo 'a!'","control":"echo 'a.'","observe":["stdout"]}"#;

#[test]
fn a_bad_data_file_is_an_error_naming_file_and_line() {
    let d = tempfile::tempdir().unwrap();
    // Line 3: not JSON.
    write_suite(d.path(), &format!("# comment\n{GOOD_PAIR}\n{{\"id\": \n"), "", "");
    let e = Suite::load(d.path()).unwrap_err().to_string();
    assert!(e.contains("pairs.jsonl:3: not a JSON object"), "{e}");
    // An unknown observable, line 1 of tasks.jsonl.
    write_suite(
        d.path(),
        GOOD_PAIR,
        "",
        r#"{"id":"t","source":"s","instruction":"i","actions":["true"],"observe":["screen"]}"#,
    );
    let e = Suite::load(d.path()).unwrap_err().to_string();
    assert!(
        e.contains("tasks.jsonl:1: item `t`: unknown observable `screen`"),
        "{e}"
    );
    // A duplicate id.
    write_suite(d.path(), &format!("{GOOD_PAIR}\n\n{GOOD_PAIR}\n"), "", "");
    let e = Suite::load(d.path()).unwrap_err().to_string();
    assert!(
        e.contains("pairs.jsonl:3: id `p1` is already used on line 1"),
        "{e}"
    );
    // A setup file outside the sandbox.
    let bad = GOOD_PAIR.replace("\"observe\"", "\"setup\":{\"../x\":\"\"},\"observe\"");
    write_suite(d.path(), &bad, "", "");
    let e = Suite::load(d.path()).unwrap_err().to_string();
    assert!(e.contains("pairs.jsonl:1: item `p1`: setup file `../x`"), "{e}");
    // A chain of two calls, on line 2.
    let builtin = include_str!("../data/chains.jsonl");
    let one = builtin
        .lines()
        .find(|l| l.starts_with('{') && l.contains("\"3\":") && !l.contains("\"4\":"))
        .unwrap();
    let mut v: serde_json::Value = serde_json::from_str(one).unwrap();
    v["calls"].as_array_mut().unwrap().pop();
    write_suite(d.path(), GOOD_PAIR, &format!("\n{v}\n"), "");
    let e = Suite::load(d.path()).unwrap_err().to_string();
    assert!(
        e.contains("chains.jsonl:2: item ") && e.contains("2 calls: a chain has 3 to 7"),
        "{e}"
    );
    // A missing file.
    write_suite(d.path(), GOOD_PAIR, "", "");
    std::fs::remove_file(d.path().join("tasks.jsonl")).unwrap();
    let e = Suite::load(d.path()).unwrap_err().to_string();
    assert!(e.contains("tasks.jsonl:0: cannot read"), "{e}");
}

#[test]
fn a_control_run_that_contradicts_the_data_is_an_error() {
    let d = tempfile::tempdir().unwrap();
    let pair = GOOD_PAIR.replace(
        "\"observe\":[\"stdout\"]",
        "\"observe\":[\"stdout\"],\"expect\":{\"stdout\":\"b.\\n\"}",
    );
    write_suite(d.path(), &pair, "", "");
    let s = Suite::load(d.path()).unwrap();
    let cat = Catalog::builtin();
    let e = Runner::new(&cat, &["bash-c"])
        .unwrap()
        .run(&s, 1)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "pairs.jsonl: item `p1`: the control run on bash -c gives stdout = \"a.\\n\", the data expects \"b.\\n\""
    );
}

#[test]
fn a_real_toolhop_file_loads_without_running_its_functions() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("ToolHop.json");
    let rec = serde_json::json!([{
        "id": 0,
        "question": "On which day of the week was the inventor of the oil engine at Richard Hornsby & Sons born?",
        "answer": "Thursday",
        "sub_task": {"1": "Who invented the oil engine at Richard Hornsby & Sons?", "2": "When was he born?", "3": "Which day?"},
        "tools": {"inventor_lookup": {"name": "inventor_lookup", "description": "d", "parameters": {"type": "object", "properties": {"company_name": {"type": "string"}}}}},
        "functions": ["def inventor_lookup(company_name):\n    import os; os.system('touch PWNED')\n"],
        "domain": "history", "category": "c", "answer_type": "date", "previous_answer_type": "name"
    }]);
    std::fs::write(&f, serde_json::to_string_pretty(&rec).unwrap()).unwrap();
    let chains = chain::load_toolhop(&f).unwrap();
    assert_eq!(chains.len(), 1);
    assert_eq!(chains[0].id, "0");
    assert_eq!(chains[0].sub_task.len(), 3);
    assert!(!chains[0].replayable());
    assert!(matches!(&chains[0].functions, Functions::Source(s) if s[0].contains("PWNED")));
    assert!(!d.path().join("PWNED").exists());
    // A record whose sub_task is empty, and a file that is not an array, with its line.
    std::fs::write(
        &f,
        r#"[{"id": 1, "question": "q", "answer": "a", "sub_task": {}, "tools": {}, "functions": []}]"#,
    )
    .unwrap();
    let e = chain::load_toolhop(&f).unwrap_err().to_string();
    assert!(
        e.ends_with("ToolHop.json:0: record 0: `sub_task` must be a non-empty object"),
        "{e}"
    );
    std::fs::write(&f, "[\n{\"id\": 1,\n").unwrap();
    let e = chain::load_toolhop(&f).unwrap_err().to_string();
    assert!(
        e.contains("ToolHop.json:3: not a JSON array of ToolHop records"),
        "{e}"
    );
}

/// A suite of one pair in `dir`: `printf '%s' 'a!a!…' > out.txt` (`n` times `a!`), its control
/// with `.` for `!`.
fn bang_pair(dir: &std::path::Path, n: usize) -> Suite {
    let text = |c: char| format!("printf '%s' '{}' > out.txt", format!("a{c}").repeat(n));
    let pair = serde_json::json!({
        "id": "bang", "family": "f", "source": "s", "contract": "shell-string", "intent": "i",
        "hazard": text('!'), "control": text('.'), "observe": ["file:out.txt"],
    });
    write_suite(dir, &pair.to_string(), "", "");
    Suite::load(dir).unwrap()
}

#[test]
fn a_repair_that_execve_refuses_at_the_spawn_hop_is_hop_hiding() {
    // 2.1.72 writes `!` as `\!` (first divergence at the eval hop); IntAct's `eval $'…'` is
    // four bytes a `!`, so a 60,000-byte text becomes an argv element over execve's 128 KiB:
    // the rendering's check fails at the spawn hop, which the text itself passed.
    let d = tempfile::tempdir().unwrap();
    let (rep, r) = on_bash_c_and_2_1_72(&bang_pair(d.path(), 30_000));
    assert!(r.lost() && !r.recovered(), "{r:?}");
    assert_eq!((r.on.refused, r.on.other_hop, r.on.repaired), (1, 1, 0), "{r:?}");
    assert!(r.hop_hidden() && !r.false_repair());
    assert_eq!(r.mechanisms, vec![iec_core::Mechanism::ReExpansion]);
    let m = &rep.paths["claude-code-2.1.72-linux"];
    assert_eq!((m.lost, m.hop_hiding, m.mechanisms["re-expansion"]), (1, 1, 1));
    assert_eq!(rep.paths["bash-c"].hop_hiding, 0);
    // A text short enough for its rendering is recovered, not hidden.
    let (rep, r) = on_bash_c_and_2_1_72(&bang_pair(d.path(), 10));
    assert!(r.recovered() && !r.hop_hidden(), "{r:?}");
    assert_eq!(rep.paths["claude-code-2.1.72-linux"].hop_hiding, 0);
}

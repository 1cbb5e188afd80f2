"""No Rust function under crates/*/src is longer than 120 lines
(tools/fn_length.py), and the checker's brace matching is not fooled by
braces in comments, strings or char literals."""

import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("fn_length", ROOT / "tools" / "fn_length.py")
fn_length = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fn_length)

FIXTURE = r'''
//! a module { with a brace in its doc
trait T {
    fn declared(&self) -> u32;
}

fn short<'a>(x: &'a str) -> char {
    let _s = "}}}";             // "{" in a comment
    let _r = r#"}" {{ "#;
    let _b = br"}";
    /* a /* nested */ } block comment */
    let _c = '{';
    let _e = '\'';
    let _u = '\u{7d}';
    let _l: &'a str = x;
    'outer: loop { break 'outer; }
    '}'
}

fn long() {
    if true {
        let _ = 1;
    }
    let _ = "
        }
    ";
}
'''


def test_braces_in_comments_strings_and_chars_are_ignored():
    got = {name: (line, n) for name, line, n in fn_length.functions(FIXTURE)}
    assert got == {"short": (7, 12), "long": (20, 8)}  # `declared` has no body


def test_functions_over_the_limit_are_named_with_file_and_line(tmp_path):
    f = tmp_path / "m.rs"
    f.write_text(FIXTURE)
    assert fn_length.too_long([tmp_path], limit=12, root=tmp_path) == []
    assert fn_length.too_long([tmp_path], limit=11, root=tmp_path) == ["m.rs:7 fn short (12 lines, at most 11)"]


def test_no_rust_function_is_over_120_lines():
    """The gate: split a longer function into named steps."""
    over = fn_length.too_long(sorted(ROOT.glob("crates/*")))
    assert not over, "functions over 120 lines:\n" + "\n".join(over)

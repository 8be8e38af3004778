//! Unit tests of the formula language: precedence and associativity, the evaluation rules
//! (NaN, short-circuits), names and indexes, errors with columns, and deep nesting.

use super::*;

fn canon(s: &str) -> String {
    Expr::parse(s)
        .unwrap_or_else(|e| panic!("{s:?}: {e}"))
        .to_string()
}

fn val(s: &str) -> f64 {
    let vars = |n: &str| match n {
        "a" => Some(2.0),
        "b" => Some(3.0),
        "c" => Some(4.0),
        "zero" => Some(0.0),
        "nan" => Some(f64::NAN),
        "x[0]" => Some(7.0),
        _ => None,
    };
    Expr::parse(s)
        .unwrap_or_else(|e| panic!("{s:?}: {e}"))
        .eval(&vars)
        .unwrap_or_else(|e| panic!("{s:?}: {e}"))
}

fn err(s: &str) -> ExprError {
    match Expr::parse(s) {
        Ok(e) => panic!("{s:?} parsed as {e}"),
        Err(e) => e,
    }
}

#[test]
fn precedence_and_associativity() {
    assert_eq!(canon("a + b * c"), "(a + (b * c))");
    assert_eq!(canon("a * b + c"), "((a * b) + c)");
    assert_eq!(canon("a - b - c"), "((a - b) - c)");
    assert_eq!(canon("a / b / c"), "((a / b) / c)");
    assert_eq!(canon("a - b + c"), "((a - b) + c)");
    assert_eq!(canon("a / b * c"), "((a / b) * c)");
    assert_eq!(val("a - b - c"), 2.0 - 3.0 - 4.0);
    assert_eq!(val("a / b / c"), 2.0 / 3.0 / 4.0);
    assert_eq!(val("a + b * c"), 2.0 + 3.0 * 4.0);
    // Comparisons bind looser than arithmetic, & and | looser than comparisons.
    assert_eq!(canon("a < 6 * 2 + 1"), "(a < ((6 * 2) + 1))");
    assert_eq!(canon("a > 70 | b > 10"), "((a > 70) | (b > 10))");
    assert_eq!(
        canon("a > 1 | b > 2 & c > 3"),
        "((a > 1) | ((b > 2) & (c > 3)))"
    );
    assert_eq!(canon("not a > b"), "(not (a > b))");
}

#[test]
fn unary_minus_and_parentheses() {
    assert_eq!(canon("-a * b"), "((-a) * b)");
    assert_eq!(canon("a * -b"), "(a * (-b))");
    assert_eq!(canon("- - a"), "(-(-a))");
    assert_eq!(canon("+a"), "a");
    assert_eq!(canon("(a + b) * c"), "((a + b) * c)");
    assert_eq!(canon("((( a )))"), "a");
    assert_eq!(val("-a * b"), -6.0);
    assert_eq!(val("a - -b"), 5.0);
    assert_eq!(val("(a + b) * c"), 20.0);
    assert_eq!(val("-(a + b)"), -5.0);
}

#[test]
fn conditional_is_lowest_and_right_associative() {
    assert_eq!(canon("a if b else c"), "(a if b else c)");
    assert_eq!(
        canon("a + 1 if b > 2 else c * 2"),
        "((a + 1) if (b > 2) else (c * 2))"
    );
    assert_eq!(
        canon("a if zero else b if c else 9"),
        "(a if zero else (b if c else 9))"
    );
    assert_eq!(
        canon("(a if zero else b) if c else 9"),
        "((a if zero else b) if c else 9)"
    );
    assert_eq!(val("a if zero else b if c else 9"), 3.0);
    assert_eq!(val("a if zero else b if zero else 9"), 9.0);
    assert_eq!(val("a if 1 else b"), 2.0);
    // Intel's pattern: `d / ( e if smt_on else ( c ) )`.
    assert_eq!(val("c / ( a if zero else ( b ) )"), 4.0 / 3.0);
    // Only the branch taken is evaluated.
    assert_eq!(val("a if 1 else undefined_name"), 2.0);
    assert!(val("a if nan else b").is_nan());
}

#[test]
fn comparisons_with_blanks_inside() {
    assert_eq!(canon("b > = 0"), "(b >= 0)");
    assert_eq!(canon("b >= 0"), "(b >= 0)");
    assert_eq!(canon("b < = 0"), "(b <= 0)");
    assert_eq!(canon("b = = 0"), "(b == 0)");
    assert_eq!(canon("b ! = 0"), "(b != 0)");
    assert_eq!(canon("!b"), "(not b)");
    assert_eq!(val("b > = 3"), 1.0);
    assert_eq!(val("b > = 4"), 0.0);
    assert_eq!(val("b < = 3"), 1.0);
    assert_eq!(val("b < 3"), 0.0);
    assert_eq!(val("b == 3"), 1.0);
    assert_eq!(val("b != 3"), 0.0);
    // Intel's DTLB_Load shape.
    let f = "( min( ( a * b ) , a * ( ( 7 ) ) ) if ( b > = 0 ) else ( a * ( ( 7 ) ) ) )";
    assert_eq!(val(f), (2.0f64 * 3.0).min(2.0 * 7.0));
}

#[test]
fn logic_operators() {
    assert_eq!(val("( a > 1 ) & ( b > 1 )"), 1.0);
    assert_eq!(val("( a > 5 ) & ( b > 1 )"), 0.0);
    assert_eq!(val("a > 5 | b > 1"), 1.0);
    assert_eq!(val("a > 5 || b > 5"), 0.0);
    assert_eq!(val("a > 1 && b > 1"), 1.0);
    assert_eq!(val("a > 1 and not b > 1"), 0.0);
    assert_eq!(val("zero or a"), 1.0);
    // Short circuit: the right side is not looked up.
    assert_eq!(val("zero & undefined_name"), 0.0);
    assert_eq!(val("a | undefined_name"), 1.0);
    // NaN compares false; a NaN condition gives NaN.
    assert_eq!(val("nan > 5"), 0.0);
    assert!(val("nan & a").is_nan());
    assert!(val("not nan").is_nan());
}

#[test]
fn functions() {
    assert_eq!(val("min(a, b)"), 2.0);
    assert_eq!(val("max( a , b )"), 3.0);
    assert_eq!(val("max( 0 , a - c )"), 0.0);
    assert_eq!(val("min(max(a, b), c) * 2"), 6.0);
    assert_eq!(val("d_ratio(c, a)"), 2.0);
    assert_eq!(val("d_ratio(c, zero)"), 0.0);
    assert!(val("max(0, nan)").is_nan(), "f64::max would drop the NaN");
    assert!(val("min(nan, 0)").is_nan());
    assert_eq!(canon("min( a , b + c )"), "min(a, (b + c))");
}

#[test]
fn division_by_zero_is_nan() {
    assert!(val("a / zero").is_nan());
    assert!(val("zero / zero").is_nan());
    assert!(val("a / (b - b)").is_nan());
    assert!(val("100 * (a / zero) + 1").is_nan());
}

#[test]
fn numbers() {
    assert_eq!(val("1e9"), 1e9);
    assert_eq!(val("1E9"), 1e9);
    assert_eq!(val("2.5e-3"), 0.0025);
    assert_eq!(val("1e+2"), 100.0);
    assert_eq!(val("4.4"), 4.4);
    assert_eq!(val(".5"), 0.5);
    assert_eq!(val("9."), 9.0);
    assert_eq!(val("0.0001 * 10000"), 0.0001 * 10000.0);
    assert_eq!(val("64 / 9.0"), 64.0 / 9.0);
    assert_eq!(val("( 99 * 3 + 63 + 30 ) / 5"), 78.0);
}

#[test]
fn names_and_indexes() {
    let e = Expr::parse("(b / a[0]) * socket_count + b - DURATIONTIMEINSECONDS").unwrap();
    assert_eq!(
        e.names(),
        vec!["b", "a", "socket_count", "DURATIONTIMEINSECONDS"]
    );
    assert_eq!(
        e.to_string(),
        "((((b / a[0]) * socket_count) + b) - DURATIONTIMEINSECONDS)"
    );
    assert_eq!(val("x[0] * 2"), 14.0);
    // An index followed by a dotted continuation stays part of the name.
    let e = Expr::parse("system.sockets[0].cpus.count * system.socket_count").unwrap();
    assert_eq!(
        e.names(),
        vec!["system.sockets[0].cpus.count", "system.socket_count"]
    );
    // Event-style names with ':' and '.' are single names.
    let e = Expr::parse("mem_inst_retired.lock_loads * mem_inst_retired.lock_loads:retire_latency")
        .unwrap();
    assert_eq!(
        e.names(),
        vec![
            "mem_inst_retired.lock_loads",
            "mem_inst_retired.lock_loads:retire_latency"
        ]
    );
    assert_eq!(
        Expr::parse("a + a * min(a, b)").unwrap().names(),
        vec!["a", "b"]
    );
}

#[test]
fn eval_errors_name_the_unknown() {
    let e = Expr::parse("a + mystery").unwrap();
    let r = e.eval(&|n| (n == "a").then_some(1.0));
    assert_eq!(r, Err(EvalError::UnknownName("mystery".into())));
    assert_eq!(r.unwrap_err().to_string(), "unknown name 'mystery'");
    let e = Expr::parse("a[3]").unwrap();
    assert_eq!(
        e.eval(&|_| None),
        Err(EvalError::UnknownName("a[3]".into()))
    );
    let e = Expr::parse("a").unwrap();
    let r = e.eval_with(&|n, _| {
        Err(EvalError::NoValue {
            name: n.into(),
            reason: "event X was not counted".into(),
        })
    });
    assert_eq!(
        r.unwrap_err().to_string(),
        "no value for 'a': event X was not counted"
    );
}

#[test]
fn parse_errors_have_columns() {
    let e = err("(a + b");
    assert_eq!(e.column(), 7);
    assert!(e.message.contains("unbalanced '('"), "{e}");
    assert!(e.message.contains("column 1"), "{e}");

    let e = err("a + b)");
    assert_eq!(e.column(), 6);
    assert!(e.message.contains("unbalanced ')'"), "{e}");

    let e = err("a b");
    assert_eq!(e.column(), 3);
    assert!(e.message.contains("unexpected 'b'"), "{e}");

    let e = err("a + 1 2");
    assert_eq!(e.column(), 7);

    let e = err("3 * foo(a, b)");
    assert_eq!(e.column(), 5);
    assert!(e.message.contains("unknown function 'foo'"), "{e}");

    let e = err("min(a)");
    assert!(e.message.contains("takes 2 arguments, got 1"), "{e}");
    let e = err("max(a, b, c)");
    assert!(e.message.contains("got 3"), "{e}");

    let e = err("a if b");
    assert_eq!(e.column(), 7);
    assert!(e.message.contains("expected 'else'"), "{e}");

    let e = err("a +");
    assert_eq!(e.column(), 4);
    assert!(e.message.contains("ends where a value is expected"), "{e}");

    let e = err("a = b");
    assert_eq!(e.column(), 3);
    let e = err("a < b < c");
    assert!(e.message.contains("chained comparison"), "{e}");
    let e = err("2a + 1");
    assert_eq!(e.column(), 1);
    assert!(e.message.contains("bad number \"2a\""), "{e}");
    let e = err("1e + 1");
    assert!(e.message.contains("exponent"), "{e}");
    let e = err("a ^ b");
    assert_eq!(e.column(), 3);
    let e = err("");
    assert_eq!(e.column(), 1);
    let e = err("a[b]");
    assert_eq!(e.column(), 3);
    let e = err("else");
    assert!(e.message.contains("keyword 'else'"), "{e}");

    // The message is one line with the column and a short excerpt.
    let e = err("( a * b ) ) + c");
    assert_eq!(
        e.to_string(),
        "bad formula at column 11: unbalanced ')': no '(' to close near \") + c\""
    );
    assert!(!e.to_string().contains('\n'));
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let deep = format!("{}a{}", "(".repeat(5000), ")".repeat(5000));
    assert!(err(&deep).message.contains("nests deeper"));
    let long_chain = vec!["a"; 5000].join(" + ");
    assert!(err(&long_chain).message.contains("nests deeper"));
    let minus = format!("{}a", "-".repeat(5000));
    assert!(err(&minus).message.contains("nests deeper"));
    // Ordinary long formulas are fine.
    let ok = vec!["a"; 250].join(" + ");
    assert_eq!(Expr::parse(&ok).unwrap().eval(&|_| Some(1.0)), Ok(250.0));
    let ok = format!("{}a{}", "(".repeat(30), ")".repeat(30));
    assert!(Expr::parse(&ok).is_ok());
}

//! Expectations below were produced by Node 24.21 (`JSON.parse`, `JSON.stringify(v, null, 2)`,
//! `String(number)`) and pasted as literals; the tests do not need Node.

use super::*;

fn obj(fields: &[(&str, Value)]) -> Value {
    Value::Object(
        fields
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
    )
}

fn s(v: &str) -> Value {
    Value::String(v.to_owned())
}

fn n(v: f64) -> Value {
    Value::Number(v)
}

fn keys(v: &Value) -> Vec<&str> {
    match v {
        Value::Object(fields) => fields.iter().map(|(k, _)| k.as_str()).collect(),
        other => panic!("not an object: {other:?}"),
    }
}

#[test]
fn integer_like_keys_come_first_in_ascending_order() {
    let v = parse(r#"{"b":1,"2":"x","a":2}"#).unwrap();
    assert_eq!(v, obj(&[("2", s("x")), ("b", n(1.0)), ("a", n(2.0))]));

    let v =
        parse(r#"{"a":1,"4294967295":1,"4294967296":1,"9007199254740991":1,"4294967294":2,"5":1}"#)
            .unwrap();
    assert_eq!(
        keys(&v),
        [
            "5",
            "4294967294",
            "a",
            "4294967295",
            "4294967296",
            "9007199254740991"
        ]
    );

    let v =
        parse(r#"{"x":0,"01":1,"-1":2,"1.0":3,"+1":4," 1":5,"1e2":6,"":7,"0":8,"10":9,"9":10}"#)
            .unwrap();
    assert_eq!(
        keys(&v),
        ["0", "9", "10", "x", "01", "-1", "1.0", "+1", " 1", "1e2", ""]
    );
}

#[test]
fn array_index_boundaries() {
    assert_eq!(array_index("0"), Some(0));
    assert_eq!(array_index("4294967294"), Some(4_294_967_294));
    assert_eq!(array_index("4294967295"), None);
    assert_eq!(array_index("9999999999"), None);
    assert_eq!(array_index("42949672940"), None);
    assert_eq!(array_index("01"), None);
    assert_eq!(array_index("00"), None);
    assert_eq!(array_index("-1"), None);
    assert_eq!(array_index("-0"), None);
    assert_eq!(array_index(""), None);
    assert_eq!(array_index("1a"), None);
    assert_eq!(array_index("١"), None); // Arabic-Indic digit one
}

#[test]
fn duplicate_keys_keep_first_position_and_last_value() {
    let v = parse(r#"{"a":1,"b":2,"a":3}"#).unwrap();
    assert_eq!(v, obj(&[("a", n(3.0)), ("b", n(2.0))]));

    let v = parse(r#"{"1":"a","x":0,"1":"b","0":"c","x":1}"#).unwrap();
    assert_eq!(v, obj(&[("0", s("c")), ("1", s("b")), ("x", n(1.0))]));

    // More keys than the small-object fast path handles.
    let mut text = String::from("{");
    for i in 0..40 {
        text.push_str(&format!("\"k{i}\":{i},"));
    }
    text.push_str("\"k3\":\"last\",\"k0\":null}");
    let v = parse(&text).unwrap();
    let Value::Object(fields) = &v else { panic!() };
    assert_eq!(fields.len(), 40);
    assert_eq!(fields[0], ("k0".to_owned(), Value::Null));
    assert_eq!(fields[3], ("k3".to_owned(), s("last")));
    assert_eq!(fields[39], ("k39".to_owned(), n(39.0)));
}

#[test]
fn into_js_property_order_for_other_producers() {
    let fields = vec![
        ("b".to_owned(), n(1.0)),
        ("7".to_owned(), n(2.0)),
        ("b".to_owned(), n(3.0)),
        ("1".to_owned(), n(4.0)),
    ];
    assert_eq!(
        Value::Object(into_js_property_order(fields)),
        obj(&[("1", n(4.0)), ("7", n(2.0)), ("b", n(3.0))])
    );
}

#[test]
fn proto_and_friends_are_plain_own_properties() {
    let v = parse(r#"{"__proto__":{"x":1},"constructor":2}"#).unwrap();
    assert_eq!(keys(&v), ["__proto__", "constructor"]);
}

#[test]
fn scalars_and_whitespace() {
    assert_eq!(parse("true").unwrap(), Value::Bool(true));
    assert_eq!(parse(" false ").unwrap(), Value::Bool(false));
    assert_eq!(parse("\t\r\nnull\n").unwrap(), Value::Null);
    assert_eq!(parse("[]").unwrap(), Value::Array(vec![]));
    assert_eq!(parse("{ }").unwrap(), Value::Object(vec![]));
    assert_eq!(
        parse(" [ 1 , \"a\" , [ ] , { } ] ").unwrap(),
        Value::Array(vec![
            n(1.0),
            s("a"),
            Value::Array(vec![]),
            Value::Object(vec![])
        ])
    );
}

#[test]
fn numbers_parse_like_js() {
    let num = |t: &str| match parse(t).unwrap() {
        Value::Number(x) => x,
        other => panic!("{other:?}"),
    };
    assert_eq!(num("0").to_bits(), 0f64.to_bits());
    assert_eq!(num("-0").to_bits(), (-0f64).to_bits());
    assert_eq!(num("-0.0").to_bits(), (-0f64).to_bits());
    assert_eq!(num("123456789012345"), 123_456_789_012_345.0);
    assert_eq!(num("9007199254740993"), 9_007_199_254_740_992.0);
    assert_eq!(num("0.1"), 0.1);
    assert_eq!(num("1e400"), f64::INFINITY);
    assert_eq!(num("-1e400"), f64::NEG_INFINITY);
    assert_eq!(num("1e-400").to_bits(), 0f64.to_bits());
    assert_eq!(num("5e-324").to_bits(), 1);
    assert_eq!(num("1.7976931348623157e308"), f64::MAX);
    assert_eq!(num("2.2250738585072011e-308"), 2.225_073_858_507_201e-308);
    assert_eq!(num("1E2"), 100.0);
    assert_eq!(num("1e+2"), 100.0);
    assert_eq!(num("12.5e-3"), 0.0125);
    assert_eq!(num("1732250000123"), 1_732_250_000_123.0);
    assert_eq!(
        num(&format!("0.{}1", "0".repeat(400))).to_bits(),
        0f64.to_bits()
    );
    assert_eq!(num(&"9".repeat(400)), f64::INFINITY);
}

#[test]
fn strings_with_escapes_and_unicode() {
    let text = r#""\u00e9\uD83D\uDE00 \" \\ \/ \b\f\n\r\t \u0000\u001f\u007f\u2028\u2029\uFFFF""#;
    assert_eq!(
        parse(text).unwrap(),
        s("é😀 \" \\ / \u{8}\u{c}\n\r\t \u{0}\u{1f}\u{7f}\u{2028}\u{2029}\u{ffff}")
    );
    assert_eq!(
        parse("\"é😀中文\u{2028}\u{7f}\"").unwrap(),
        s("é😀中文\u{2028}\u{7f}")
    );
    assert_eq!(parse(r#""a\u0041b""#).unwrap(), s("aAb"));
    assert_eq!(parse(r#""\uabcd\uABCD""#).unwrap(), s("\u{abcd}\u{abcd}"));
    // Escapes right next to multi-byte characters.
    assert_eq!(parse(r#""é\nü\"""#).unwrap(), s("é\nü\""));
}

#[test]
fn lone_surrogates_become_replacement_characters() {
    // Deviation: V8 keeps the lone UTF-16 code unit, a Rust String cannot.
    assert_eq!(parse(r#""\uD800""#).unwrap(), s("\u{fffd}"));
    assert_eq!(parse(r#""\uDC00x""#).unwrap(), s("\u{fffd}x"));
    assert_eq!(
        parse(r#""\uD800\uD800\uDC00""#).unwrap(),
        s("\u{fffd}\u{10000}")
    );
    assert_eq!(parse(r#""\uD800\n""#).unwrap(), s("\u{fffd}\n"));
    assert_eq!(parse(r#""\uDBFF\uDFFF""#).unwrap(), s("\u{10ffff}"));
}

#[test]
fn nesting_is_bounded() {
    let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
    assert!(parse(&ok).is_ok());
    let ok = format!("{}1{}", "{\"a\":".repeat(MAX_DEPTH), "}".repeat(MAX_DEPTH));
    assert!(parse(&ok).is_ok());

    let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
    let err = parse(&deep).unwrap_err();
    assert_eq!(err.position, Some(MAX_DEPTH));
    assert_eq!(
        err.message,
        "Nesting deeper than 512 levels in JSON at position 512 (line 1 column 513)"
    );
    // Hostile input far beyond the limit fails fast instead of overflowing the stack.
    let hostile = "[{\"a\":".repeat(1_000_000);
    assert!(parse(&hostile).is_err());
}

/// (input, `JSON.parse` error message in Node 24.21, or `None` when it parses).
const V8_ERRORS: &[(&str, Option<&str>)] = &[
    // Context window boundaries of the generic message.
    ("[[[[[[[[[[x[[[[[[[[[", Some("Unexpected token 'x', \"[[[[[[[[[[x[[[[[[[[[\" is not valid JSON")),
    ("x[[[[[[[[[[[[[[[[[[[[", Some("Unexpected token 'x', \"x[[[[[[[[[\"... is not valid JSON")),
    ("[[[[[[[[[x[[[[[[[[[[[", Some("Unexpected token 'x', \"[[[[[[[[[x[[[[[[[[[\"... is not valid JSON")),
    ("[[[[[[[[[[x[[[[[[[[[[", Some("Unexpected token 'x', ...\"[[[[[[[[[[x[[[[[[[[[\"... is not valid JSON")),
    ("[[[[[[[[[[[x[[[[[[[[[", Some("Unexpected token 'x', ...\"[[[[[[[[[[x[[[[[[[[[\" is not valid JSON")),
    ("[[[[[[[[[[[[[[[[[[[[x", Some("Unexpected token 'x', ...\"[[[[[[[[[[x\" is not valid JSON")),
    ("[[[[[[[[[[[x[[[[[[[[[[", Some("Unexpected token 'x', ...\"[[[[[[[[[[x[[[[[[[[[\"... is not valid JSON")),
    ("[[[[[[[[[[[[x[[[[[[[[[", Some("Unexpected token 'x', ...\"[[[[[[[[[[x[[[[[[[[[\" is not valid JSON")),
    ("[\"ééééééééé\", x, \"😀😀😀😀😀😀\"]", Some("Unexpected token 'x', ...\"ééééééé\", x, \"😀😀😀\"... is not valid JSON")),
    ("{\"a\":1,}", Some("Expected double-quoted property name in JSON at position 7 (line 1 column 8)")),
    ("", Some("Unexpected end of JSON input")),
    (" ", Some("Unexpected end of JSON input")),
    ("{\"a\":1} x", Some("Unexpected non-whitespace character after JSON at position 8 (line 1 column 9)")),
    ("[1,2", Some("Expected ',' or ']' after array element in JSON at position 4 (line 1 column 5)")),
    ("{\"a\":1", Some("Expected ',' or '}' after property value in JSON at position 6 (line 1 column 7)")),
    ("\"abc", Some("Unterminated string in JSON at position 4 (line 1 column 5)")),
    ("\"a\\x\"", Some("Bad escaped character in JSON at position 3 (line 1 column 4)")),
    ("\"a\u{1}\"", Some("Bad control character in string literal in JSON at position 2 (line 1 column 3)")),
    ("01", Some("Unexpected number in JSON at position 1 (line 1 column 2)")),
    ("1.", Some("Unterminated fractional number in JSON at position 2 (line 1 column 3)")),
    ("-", Some("No number after minus sign in JSON at position 1 (line 1 column 2)")),
    ("1e", Some("Exponent part is missing a number in JSON at position 2 (line 1 column 3)")),
    ("tru", Some("Unexpected end of JSON input")),
    ("nul", Some("Unexpected end of JSON input")),
    ("{a:1}", Some("Expected property name or '}' in JSON at position 1 (line 1 column 2)")),
    ("[1,]", Some("Unexpected token ']', \"[1,]\" is not valid JSON")),
    ("{\"a\" 1}", Some("Expected ':' after property name in JSON at position 5 (line 1 column 6)")),
    ("\"\\u12g4\"", Some("Bad Unicode escape in JSON at position 5 (line 1 column 6)")),
    ("\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\" }", Some("Unexpected non-whitespace character after JSON at position 43 (line 1 column 44)")),
    ("{\"a\":1,\"b\":[1,2,3],\"c\":{\"d\":\"eeeeeeeeeeeeeeeeeeeeeeeeeeeeee\"}}}", Some("Unexpected non-whitespace character after JSON at position 62 (line 1 column 63)")),
    ("é", Some("Unexpected token 'é', \"é\" is not valid JSON")),
    ("\"éé\" x", Some("Unexpected non-whitespace character after JSON at position 5 (line 1 column 6)")),
    ("[1,2]]", Some("Unexpected non-whitespace character after JSON at position 5 (line 1 column 6)")),
    ("NaN", Some("\"NaN\" is not valid JSON")),
    ("-Infinity", Some("No number after minus sign in JSON at position 1 (line 1 column 2)")),
    ("1 2", Some("Unexpected non-whitespace character after JSON at position 2 (line 1 column 3)")),
    ("\"\\u00", Some("Bad Unicode escape in JSON at position 5 (line 1 column 6)")),
    ("{\"a\":1,\"b\"}", Some("Expected ':' after property name in JSON at position 10 (line 1 column 11)")),
    ("{,}", Some("Expected property name or '}' in JSON at position 1 (line 1 column 2)")),
    ("[\"a\" \"b\"]", Some("Expected ',' or ']' after array element in JSON at position 5 (line 1 column 6)")),
    ("\u{feff}{}", Some("Unexpected token '\u{feff}', \"\u{feff}{}\" is not valid JSON")),
    ("\u{a0}{}", Some("Unexpected token '\u{a0}', \"\u{a0}{}\" is not valid JSON")),
    ("{\"a\":1,\n\"b\":2,\n\"c\"::3}", Some("Unexpected token ':', ...\"b\":2,\n\"c\"::3}\" is not valid JSON")),
    ("[1,,2]", Some("Unexpected token ',', \"[1,,2]\" is not valid JSON")),
    ("+1", Some("Unexpected token '+', \"+1\" is not valid JSON")),
    (".5", Some("Unexpected token '.', \".5\" is not valid JSON")),
    ("1e+", Some("Exponent part is missing a number in JSON at position 3 (line 1 column 4)")),
    ("-01", Some("Unexpected number in JSON at position 2 (line 1 column 3)")),
    ("\"\t\"", Some("Bad control character in string literal in JSON at position 1 (line 1 column 2)")),
    ("{\"a\":1 \"b\":2}", Some("Expected ',' or '}' after property value in JSON at position 7 (line 1 column 8)")),
    ("{\"a\":1,\"b\" 2}", Some("Expected ':' after property name in JSON at position 11 (line 1 column 12)")),
    ("{\"a\" }", Some("Expected ':' after property name in JSON at position 5 (line 1 column 6)")),
    ("{\"a\":1,\"b\":}", Some("Unexpected token '}', \"{\"a\":1,\"b\":}\" is not valid JSON")),
    ("{\"a\":}", Some("Unexpected token '}', \"{\"a\":}\" is not valid JSON")),
    ("[}", Some("Unexpected token '}', \"[}\" is not valid JSON")),
    ("{\"a\":1,\"b\"", Some("Expected ':' after property name in JSON at position 10 (line 1 column 11)")),
    ("{\"a\"", Some("Expected ':' after property name in JSON at position 4 (line 1 column 5)")),
    ("{\"a\":", Some("Unexpected end of JSON input")),
    ("{", Some("Expected property name or '}' in JSON at position 1 (line 1 column 2)")),
    ("[", Some("Unexpected end of JSON input")),
    ("[1", Some("Expected ',' or ']' after array element in JSON at position 2 (line 1 column 3)")),
    ("{\"a\":1,x}", Some("Expected double-quoted property name in JSON at position 7 (line 1 column 8)")),
    ("{1:2}", Some("Expected property name or '}' in JSON at position 1 (line 1 column 2)")),
    ("{\"a\":1 2}", Some("Expected ',' or '}' after property value in JSON at position 7 (line 1 column 8)")),
    ("\"a\" \"b\"", Some("Unexpected non-whitespace character after JSON at position 4 (line 1 column 5)")),
    ("[1 2]", Some("Expected ',' or ']' after array element in JSON at position 3 (line 1 column 4)")),
    ("{\"a\":1,", Some("Expected double-quoted property name in JSON at position 7 (line 1 column 8)")),
    ("[1,", Some("Unexpected end of JSON input")),
    ("undefined", Some("\"undefined\" is not valid JSON")),
    ("Infinity", Some("\"Infinity\" is not valid JSON")),
    ("[object Object]", Some("\"[object Object]\" is not valid JSON")),
    ("nan", Some("Unexpected token 'a', \"nan\" is not valid JSON")),
    ("{\"a\":1,\r\"b\":2,\r\"c\"::3}", Some("Unexpected token ':', ...\"b\":2,\r\"c\"::3}\" is not valid JSON")),
    ("{\"a\":1,\r\n\"b\":2,\r\n\"c\"::3}", Some("Unexpected token ':', ...\"\":2,\r\n\"c\"::3}\" is not valid JSON")),
    ("{\"a\":1,\u{2028}\"b\":2,\n\"c\"::3}", Some("Expected double-quoted property name in JSON at position 7 (line 1 column 8)")),
    ("\n\n  x", Some("Unexpected token 'x', \"\n\n  x\" is not valid JSON")),
    ("\r\n  x", Some("Unexpected token 'x', \"\r\n  x\" is not valid JSON")),
    ("\r\r  x", Some("Unexpected token 'x', \"\r\r  x\" is not valid JSON")),
    ("12345678901234567890123456789x", Some("Unexpected non-whitespace character after JSON at position 29 (line 1 column 30)")),
    ("x12345678901234567890123456789", Some("Unexpected token 'x', \"x123456789\"... is not valid JSON")),
    ("123456789012345x67890123456789", Some("Unexpected non-whitespace character after JSON at position 15 (line 1 column 16)")),
    ("1234567890x1234567890", Some("Unexpected non-whitespace character after JSON at position 10 (line 1 column 11)")),
    ("1234567890x12345678901", Some("Unexpected non-whitespace character after JSON at position 10 (line 1 column 11)")),
    ("\"😀\" 😀", Some("Unexpected non-whitespace character after JSON at position 5 (line 1 column 6)")),
    ("true false", Some("Unexpected non-whitespace character after JSON at position 5 (line 1 column 6)")),
    ("truex", Some("Unexpected non-whitespace character after JSON at position 4 (line 1 column 5)")),
    ("tRue", Some("Unexpected token 'R', \"tRue\" is not valid JSON")),
    ("nulL", Some("Unexpected token 'L', \"nulL\" is not valid JSON")),
    ("falsey", Some("Unexpected non-whitespace character after JSON at position 5 (line 1 column 6)")),
    ("-a", Some("No number after minus sign in JSON at position 1 (line 1 column 2)")),
    ("1.e5", Some("Unterminated fractional number in JSON at position 2 (line 1 column 3)")),
    ("1ex", Some("Exponent part is missing a number in JSON at position 2 (line 1 column 3)")),
    ("00", Some("Unexpected number in JSON at position 1 (line 1 column 2)")),
    ("0x10", Some("Unexpected non-whitespace character after JSON at position 1 (line 1 column 2)")),
    ("1e5.5", Some("Unexpected non-whitespace character after JSON at position 3 (line 1 column 4)")),
    ("{\"a\":1}}", Some("Unexpected non-whitespace character after JSON at position 7 (line 1 column 8)")),
    ("]", Some("Unexpected token ']', \"]\" is not valid JSON")),
    ("}", Some("Unexpected token '}', \"}\" is not valid JSON")),
    (":", Some("Unexpected token ':', \":\" is not valid JSON")),
    (",", Some("Unexpected token ',', \",\" is not valid JSON")),
    ("\"", Some("Unterminated string in JSON at position 1 (line 1 column 2)")),
    ("\"\\", Some("Unexpected end of JSON input")),
    ("\"\\u", Some("Bad Unicode escape in JSON at position 3 (line 1 column 4)")),
    ("\"\\u1\"", Some("Bad Unicode escape in JSON at position 4 (line 1 column 5)")),
    ("\"abc\\\"", Some("Unterminated string in JSON at position 6 (line 1 column 7)")),
    ("{\"a\":[1,{\"b\":}]}", Some("Unexpected token '}', \"{\"a\":[1,{\"b\":}]}\" is not valid JSON")),
    ("[,]", Some("Unexpected token ',', \"[,]\" is not valid JSON")),
    ("[,1]", Some("Unexpected token ',', \"[,1]\" is not valid JSON")),
    ("[1,2,]", Some("Unexpected token ']', \"[1,2,]\" is not valid JSON")),
    ("{\"a\":1,\"a\"}", Some("Expected ':' after property name in JSON at position 10 (line 1 column 11)")),
    ("{\"__proto__\":1, \"b\" 2}", Some("Expected ':' after property name in JSON at position 20 (line 1 column 21)")),
    ("- 1", Some("No number after minus sign in JSON at position 1 (line 1 column 2)")),
    ("1.5e", Some("Exponent part is missing a number in JSON at position 4 (line 1 column 5)")),
    ("2.", Some("Unterminated fractional number in JSON at position 2 (line 1 column 3)")),
    ("\"\\/\\b\\f\\n\\r\\t\\\"\\\\\"x", Some("Unexpected non-whitespace character after JSON at position 18 (line 1 column 19)")),
    ("x\"x\"x\"x\"x\"x\"x\"x\"x\"x\"x\"x\"x\"x\"x\"x\"x\"x\"x\"x\"x\"x\"x\"x\"x\"x\"x\"x\"x\"x\"", Some("Unexpected token 'x', \"x\"x\"x\"x\"x\"\"... is not valid JSON")),
    ("{\"a\":\"b\" , \"c\" : \"d\" ,}", Some("Expected double-quoted property name in JSON at position 22 (line 1 column 23)")),
    ("\n\n  1 x", Some("Unexpected non-whitespace character after JSON at position 6 (line 3 column 5)")),
    ("\r\n  1 x", Some("Unexpected non-whitespace character after JSON at position 6 (line 2 column 5)")),
    ("\r\r  1 x", Some("Unexpected non-whitespace character after JSON at position 6 (line 3 column 5)")),
    ("\n\r  1 x", Some("Unexpected non-whitespace character after JSON at position 6 (line 3 column 5)")),
    ("1\n x", Some("Unexpected non-whitespace character after JSON at position 3 (line 2 column 2)")),
    ("1\r\n x", Some("Unexpected non-whitespace character after JSON at position 4 (line 2 column 2)")),
    ("\u{2028}", Some("Unexpected token '\u{2028}', \"\u{2028}\" is not valid JSON")),
    ("[1,\n2\n\n3]", Some("Expected ',' or ']' after array element in JSON at position 7 (line 4 column 1)")),
    ("\"a\n\"", Some("Bad control character in string literal in JSON at position 2 (line 1 column 3)")),
    ("{\"x\":\n\"\\q\"}", Some("Bad escaped character in JSON at position 8 (line 2 column 3)")),
    ("[1\r\n,\r\n2 3]", Some("Expected ',' or ']' after array element in JSON at position 9 (line 3 column 3)")),
    ("\n", Some("Unexpected end of JSON input")),
    ("\n\n", Some("Unexpected end of JSON input")),
    ("\"\u{2028}\" x", Some("Unexpected non-whitespace character after JSON at position 4 (line 1 column 5)")),
    ("\"é😀\" x", Some("Unexpected non-whitespace character after JSON at position 6 (line 1 column 7)")),
    ("\"😀\"\n  x", Some("Unexpected non-whitespace character after JSON at position 7 (line 2 column 3)")),
    ("x1234567890123456789", Some("Unexpected token 'x', \"x1234567890123456789\" is not valid JSON")),
    ("x12345678901234567890", Some("Unexpected token 'x', \"x123456789\"... is not valid JSON")),
    ("[1,2,3,4,5,6,7,8,9,10,x,11,12,13,14,15,16]", Some("Unexpected token 'x', ...\",7,8,9,10,x,11,12,13\"... is not valid JSON")),
    ("[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,x]", Some("Unexpected token 'x', ...\",13,14,15,x]\" is not valid JSON")),
    ("[x,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]", Some("Unexpected token 'x', \"[x,1,2,3,4,\"... is not valid JSON")),
    ("{\"name\":\"é😀é\",\"version\":x,\"description\":\"abcdefghij\"}", Some("Unexpected token 'x', ...\"\"version\":x,\"descrip\"... is not valid JSON")),
    ("\"\\uD83D\\u\"", Some("Bad Unicode escape in JSON at position 9 (line 1 column 10)")),
    ("\"\\uZZZZ\"", Some("Bad Unicode escape in JSON at position 3 (line 1 column 4)")),
    ("\"\\u00e9\\uDE00\\\"", Some("Unterminated string in JSON at position 15 (line 1 column 16)")),
    ("{\"a\":tru}", Some("Unexpected token '}', \"{\"a\":tru}\" is not valid JSON")),
    ("{\"a\":t}", Some("Unexpected token '}', \"{\"a\":t}\" is not valid JSON")),
    ("[nulx]", Some("Unexpected token 'x', \"[nulx]\" is not valid JSON")),
    ("\"\u{7f}\" x", Some("Unexpected non-whitespace character after JSON at position 4 (line 1 column 5)")),
    ("{\"a\":1}\u{a0}", Some("Unexpected non-whitespace character after JSON at position 7 (line 1 column 8)")),
    ("{\"a\":1}\u{b}", Some("Unexpected non-whitespace character after JSON at position 7 (line 1 column 8)")),
    ("\u{b}1", Some("Unexpected token '\u{b}', \"\u{b}1\" is not valid JSON")),
    ("1\u{c}", Some("Unexpected non-whitespace character after JSON at position 1 (line 1 column 2)")),
    ("\"\\é\"", Some("Bad escaped character in JSON at position 2 (line 1 column 3)")),
    ("ééééééééééééééééééééé", Some("Unexpected token 'é', \"éééééééééé\"... is not valid JSON")),
    ("[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,é,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,3]", Some("Unexpected token 'é', ...\"1,1,1,1,1,é,2,2,2,2,\"... is not valid JSON")),
];

#[test]
fn error_messages_match_v8() {
    let mismatches: Vec<String> = V8_ERRORS
        .iter()
        .filter_map(|(input, expected)| {
            let got = parse(input).err().map(|e| e.message);
            (got.as_deref() != *expected)
                .then(|| format!("input {input:?}\n  got      {got:?}\n  expected {expected:?}"))
        })
        .collect();
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn error_positions_are_utf16_offsets() {
    let err = parse("\"é😀\" x").unwrap_err();
    assert_eq!(err.position, Some(6));
    assert_eq!(parse("").unwrap_err().position, None);
    assert_eq!(err.to_string(), err.message);
}

#[test]
fn astral_unexpected_token_is_shown_whole() {
    // Deviation: V8 shows only the high surrogate ('\ud83d') of the character.
    assert_eq!(
        parse("[😀]").unwrap_err().message,
        "Unexpected token '😀', \"[😀]\" is not valid JSON"
    );
}

/// (input, `JSON.stringify(JSON.parse(input), null, 2)` in Node 24.21).
const ROUND_TRIPS: &[(&str, &str)] = &[
    ("{\"b\":1,\"2\":\"x\",\"a\":2}", "{\n  \"2\": \"x\",\n  \"b\": 1,\n  \"a\": 2\n}"),
    ("{\"4294967295\":1,\"4294967294\":2,\"a\":3,\"0\":4,\"01\":5,\"-1\":6,\"1.0\":7,\"10\":8,\"9\":9}", "{\n  \"0\": 4,\n  \"9\": 9,\n  \"10\": 8,\n  \"4294967294\": 2,\n  \"4294967295\": 1,\n  \"a\": 3,\n  \"01\": 5,\n  \"-1\": 6,\n  \"1.0\": 7\n}"),
    ("{\"a\":1,\"b\":2,\"a\":3}", "{\n  \"a\": 3,\n  \"b\": 2\n}"),
    ("{\"1\":\"a\",\"x\":0,\"1\":\"b\",\"0\":\"c\",\"x\":1}", "{\n  \"0\": \"c\",\n  \"1\": \"b\",\n  \"x\": 1\n}"),
    ("{\"__proto__\":{\"x\":1},\"constructor\":2,\"toString\":3}", "{\n  \"__proto__\": {\n    \"x\": 1\n  },\n  \"constructor\": 2,\n  \"toString\": 3\n}"),
    ("{}", "{}"),
    ("[]", "[]"),
    ("[{}]", "[\n  {}\n]"),
    ("{\"a\":[]}", "{\n  \"a\": []\n}"),
    ("{\"a\":{}}", "{\n  \"a\": {}\n}"),
    ("[[],[[]],{\"k\":[{}]}]", "[\n  [],\n  [\n    []\n  ],\n  {\n    \"k\": [\n      {}\n    ]\n  }\n]"),
    ("\"\\u00e9\\uD83D\\uDE00 \\\" \\\\ \\/ \\b\\f\\n\\r\\t \\u0000\\u001f\\u007f\\u2028\\u2029\"", "\"é😀 \\\" \\\\ / \\b\\f\\n\\r\\t \\u0000\\u001f\u{7f}\u{2028}\u{2029}\""),
    ("\"é😀中文 \u{2028}\"", "\"é😀中文 \u{2028}\""),
    ("[0, -0, 1, -1, 1.5, 1e21, 1e20, 123456789012345678901234567890, 1e-6, 1e-7, 0.000001234, 1.7976931348623157e308, 5e-324, 2.2250738585072014e-308, 1e400, -1e400, 0.1, 0.2, 0.30000000000000004, 100, 1e2, 1E2, 1e+2, 12.5e-3, 9007199254740993, 4294967296, 1732250000123, 123e-20, 1.5e300, -0.0]", "[\n  0,\n  0,\n  1,\n  -1,\n  1.5,\n  1e+21,\n  100000000000000000000,\n  1.2345678901234568e+29,\n  0.000001,\n  1e-7,\n  0.000001234,\n  1.7976931348623157e+308,\n  5e-324,\n  2.2250738585072014e-308,\n  null,\n  null,\n  0.1,\n  0.2,\n  0.30000000000000004,\n  100,\n  100,\n  100,\n  100,\n  0.0125,\n  9007199254740992,\n  4294967296,\n  1732250000123,\n  1.23e-18,\n  1.5e+300,\n  0\n]"),
    ("  \t\n\r{ \"a\" : [ 1 , 2 ] , \"b\" : { } }  \n", "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": {}\n}"),
    ("{\"name\":\"foo\",\"version\":\"1.0.0\",\"scripts\":{\"test\":\"x\"},\"dependencies\":{\"a\":\"^1\",\"b\":\"~2\"},\"bin\":{\"foo\":\"cli.js\"},\"bool\":true,\"f\":false,\"n\":null,\"arr\":[null,true,1,\"s\",{\"x\":[]}]}", "{\n  \"name\": \"foo\",\n  \"version\": \"1.0.0\",\n  \"scripts\": {\n    \"test\": \"x\"\n  },\n  \"dependencies\": {\n    \"a\": \"^1\",\n    \"b\": \"~2\"\n  },\n  \"bin\": {\n    \"foo\": \"cli.js\"\n  },\n  \"bool\": true,\n  \"f\": false,\n  \"n\": null,\n  \"arr\": [\n    null,\n    true,\n    1,\n    \"s\",\n    {\n      \"x\": []\n    }\n  ]\n}"),
    ("true", "true"),
    ("false", "false"),
    ("null", "null"),
    ("42", "42"),
    ("\"str\"", "\"str\""),
    ("{\"a\":{\"b\":{\"c\":{\"d\":[1,[2,[3,{\"e\":\"f\"}]]]}}}}", "{\n  \"a\": {\n    \"b\": {\n      \"c\": {\n        \"d\": [\n          1,\n          [\n            2,\n            [\n              3,\n              {\n                \"e\": \"f\"\n              }\n            ]\n          ]\n        ]\n      }\n    }\n  }\n}"),
    ("{\"10\":1,\"9\":2,\"100\":3,\"1e2\":4,\"b\":5,\" 1\":6,\"1 \":7,\"+1\":8,\"\":9,\"a\":10}", "{\n  \"9\": 2,\n  \"10\": 1,\n  \"100\": 3,\n  \"1e2\": 4,\n  \"b\": 5,\n  \" 1\": 6,\n  \"1 \": 7,\n  \"+1\": 8,\n  \"\": 9,\n  \"a\": 10\n}"),
];

#[test]
fn stringify_pretty_matches_json_stringify() {
    for (input, expected) in ROUND_TRIPS {
        let v = parse(input).unwrap();
        assert_eq!(stringify_pretty(&v), *expected, "input: {input:?}");
    }
}

#[test]
fn stringify_pretty_undefined_map_and_non_finite() {
    let v = Value::Object(vec![
        ("a".to_owned(), Value::Undefined),
        (
            "b".to_owned(),
            Value::Array(vec![Value::Undefined, n(f64::NAN), n(f64::NEG_INFINITY)]),
        ),
        ("c".to_owned(), Value::Map(vec![(s("k"), s("v"))])),
        ("d".to_owned(), obj(&[("x", Value::Undefined)])),
        ("e".to_owned(), Value::Undefined),
    ]);
    // JSON.stringify({a: undefined, b: [undefined, NaN, -Infinity], c: new Map([['k', 'v']]),
    //                 d: {x: undefined}, e: undefined}, null, 2)
    assert_eq!(
        stringify_pretty(&v),
        "{\n  \"b\": [\n    null,\n    null,\n    null\n  ],\n  \"c\": {},\n  \"d\": {}\n}"
    );
    assert_eq!(stringify_pretty(&obj(&[("a", Value::Undefined)])), "{}");
    assert_eq!(stringify_pretty(&Value::Undefined), "null");
    // JSON.stringify('\u0001\u0008\u000b\u001b"\\') — lower-case hex, short escapes where JSON has them.
    assert_eq!(
        stringify_pretty(&s("\u{1}\u{8}\u{b}\u{1b}\"\\")),
        r#""\u0001\b\u000b\u001b\"\\""#
    );
}

/// (f64 bits, `String(number)` in Node 24.21): curated edge cases, then pseudo-random doubles.
const NUMBER_STRINGS: &[(u64, &str)] = &[
    (0x0000000000000000, "0"),
    (0x8000000000000000, "0"),
    (0x3ff0000000000000, "1"),
    (0xbff0000000000000, "-1"),
    (0x3fb999999999999a, "0.1"),
    (0x3fd5555555555555, "0.3333333333333333"),
    (0x3fe5555555555555, "0.6666666666666666"),
    (0x444b1ae4d6e2ef50, "1e+21"),
    (0x444b1ae4d6e2ef50, "1e+21"),
    (0x444b1ae4d6e2ef4f, "999999999999999900000"),
    (0x3eb0c6f7a0b5ed8d, "0.000001"),
    (0x3e7ad7f29abcaf48, "1e-7"),
    (0x3e8421f5f40d8376, "1.5e-7"),
    (0x40fe240c9fbe76c9, "123456.789"),
    (0x0000000000000001, "5e-324"),
    (0x7fefffffffffffff, "1.7976931348623157e+308"),
    (0x4340000000000000, "9007199254740992"),
    (0x4340000000000001, "9007199254740994"),
    (0x43f0000000000000, "18446744073709552000"),
    (0x0000000000000003, "1.5e-323"),
    (0x4011666666666666, "4.35"),
    (0x3eb0c6f7a0b5ed8d, "0.000001"),
    (0x3eb27476ca61b882, "0.0000011"),
    (0x3ee4f8b588e368f1, "0.00001"),
    (0x4341c37937e08000, "10000000000000000"),
    (0x4376345785d8a000, "100000000000000000"),
    (0x4484542ba12a337c, "1.2e+22"),
    (0x444b1ae4d6e2ef4f, "999999999999999900000"),
    (0x4059000000000000, "100"),
    (0x54b249ad2594c37d, "1e+100"),
    (0x2b2ecbe6c835d281, "1.1e-100"),
    (0x41e0000000000000, "2147483648"),
    (0xc1e0000000000000, "-2147483648"),
    (0x4279352255afb800, "1732250000123.5"),
    (0x1c0d57f10c894254, "1.4830122828920016e-173"),
    (0x43f04a6ece53d613, "18781959765316678000"),
    (0xe2b8410510668fa6, "-3.575532127436644e+167"),
    (0xd5f2e30a9e501b7d, "-1.0829258728928171e+106"),
    (0x535c8ea8a4e05948, "3.7230187291668613e+93"),
    (0x8f7b1bac9609eaf7, "-4.262874002980358e-234"),
    (0xcb3af636587957ba, "-2.5824242072052563e+54"),
    (0x6438f14dfe833301, "6.169062368256605e+174"),
    (0xd0af9825c659f77c, "-4.682717518917287e+80"),
    (0x302bd02b522a861b, "1.2009957333271821e-76"),
    (0xfd70522e931f790e, "-1.6677967842578716e+296"),
    (0xfba9a1630e23bac5, "-4.878446657335358e+287"),
    (0x29616ccb5e0010f0, "2.318589285015657e-109"),
    (0xd37bf421a1818b7f, "-1.4577297053362402e+94"),
    (0x7a5b1baa844c07a2, "2.4603368763737895e+281"),
    (0x552e421879d836c9, "2.1178316544328792e+102"),
    (0xa92e8eaf3493d9a4, "-2.5412503051231247e-110"),
    (0x5fe48bdeead11f23, "8.60880578948587e+153"),
    (0x618d3e487ffb5776, "8.222691106237041e+161"),
    (0x5cd158ba16a76b0d, "1.29107691235244e+139"),
    (0x07727df42b81c598, "8.54570675525937e-273"),
    (0x16e635e91fb5a507, "2.3213088696070116e-198"),
    (0x38c4ac26c846fc8a, "3.1104470921459883e-35"),
    (0x8ade8c37577c5b91, "-2.5430944865444634e-256"),
    (0xa7e5b8ad611588cc, "-1.722738704669676e-116"),
    (0x83785723e5c9c12b, "-6.097780315332402e-292"),
    (0xdab33022a4b9cade, "-8.312822724526027e+128"),
    (0x41b96ab112ea4c55, "426422546.91522723"),
    (0x4b0e14fa2fee1740, "3.601597095685222e+53"),
    (0x7402f3fb0a0a578f, "6.784931974924426e+250"),
    (0xf33082c146e3d672, "-7.215120195549942e+246"),
    (0x087799f31d30c159, "7.14794175889519e-268"),
    (0x0c996e223db1a4f4, "5.6829459783155954e-248"),
    (0xe7860860627a8c33, "-4.908348627938077e+190"),
    (0xc360b934d02e7346, "-37657888876108340"),
    (0x48a12d9e7a7f7e9d, "7.482161107104073e+41"),
    (0x7c5b2a840d01a5e8, "1.0589678202639377e+291"),
    (0x36aed0278207c317, "2.698647105952319e-45"),
    (0x2f32df6d0cf0355a, "2.487004346447123e-81"),
    (0x11aadb8d2d7a8821, "1.4511783911351778e-223"),
    (0xd75f5767c6aece1c, "-7.537323673202209e+112"),
    (0x4a8fc827e2ada03b, "1.4863756283822065e+51"),
    (0x2a0254f4b8c0f0ae, "2.497802242622384e-106"),
    (0x0e3ac880e5fe21e5, "4.0166704951275935e-240"),
    (0xcc8f347b2e2d1190, "-6.2680636295350096e+60"),
    (0x52db68d069da079f, "1.3958498820165765e+91"),
    (0xda3685c1600db942, "-3.811487003186698e+126"),
    (0x02e560ba1422cfe9, "1.0460153613400835e-294"),
    (0x849d7a22f547a444, "-1.9358371998957856e-286"),
    (0xba2202bd6b111d43, "-1.1366351447045025e-28"),
    (0xeb7d555532ece316, "-6.027238632455651e+209"),
    (0xc22299e52381562d, "-39945671104.66831"),
    (0x37774f28e314fa38, "1.6723543490008127e-41"),
    (0x8f5f6fac8cd14527, "-1.2358728798842298e-234"),
    (0x597820df5d32022a, "9.968892688048793e+122"),
    (0x0342921fe2b6b8b1, "5.815469976147267e-293"),
    (0x7b3c5add822ac76c, "4.21642788634725e+285"),
    (0x350acc1833b7234b, "3.4972035583573107e-53"),
    (0x532b85a8b7c1ea7e, "4.485081553067219e+92"),
    (0xce2f82f15b283b75, "-4.2477411636603242e+68"),
    (0x28a233c74a11ffe0, "5.913123370859785e-113"),
    (0x201f621657e19baf, "5.85165628779005e-154"),
    (0xe9b5194fe726b012, "-1.615014514429681e+201"),
    (0xdbdab32a9d076279, "-3.0322654230317206e+134"),
    (0x8b3557b077fad794, "-1.137128930106147e-254"),
    (0xb29fb30ce895d253, "-7.525098736431211e-65"),
    (0x828b4a613b63a6e6, "-2.0864429132840474e-296"),
    (0x92fe80074395f1bd, "-3.456086128287877e-217"),
    (0x192113900ab0c288, "1.2264488850957287e-187"),
    (0xb510e5a822232b37, "-4.410348039710868e-53"),
    (0xf8b096f3e50962fa, "-2.243641892571957e+273"),
    (0x1ffcc8c8b5a9ed41, "1.3417700686150025e-154"),
    (0xdc622fa995ce74bc, "-1.0574736719306435e+137"),
    (0x49242e7d7a074a5b, "2.250323833115041e+44"),
    (0x66a5e5675389b84e, "2.9772428268251304e+186"),
    (0xb17b50af66719905, "-2.4735747140749734e-70"),
    (0xe69fb192e031e230, "-2.1547136336756245e+186"),
    (0xd1c55e28055213bf, "-8.302111359536645e+85"),
    (0x9dfade60d0cbbae2, "-2.9161406126280175e-164"),
    (0x2d37dde19a777909, "7.322748579844029e-91"),
    (0x464aa1d581b03ee4, "4.2200348511762445e+30"),
    (0x174205b17d49ab63, "1.205484407881185e-196"),
    (0x6c93d002adffbeb6, "1.0671785741280018e+215"),
    (0x9ab990bf74e6514d, "-6.161061688309075e-180"),
    (0xaeed00ddf409fed8, "-1.1943728281977692e-82"),
    (0x1bbe6c05464e7547, "4.8047374242587294e-175"),
    (0x830f964395b357ca, "-6.1821878301584555e-294"),
    (0xd632c298510d25d1, "-1.7210538992596628e+107"),
    (0xfaae2e18cb1ed60c, "-8.765286751978548e+282"),
    (0xb07853391cff156b, "-3.3612092694095636e-75"),
    (0xf76acc8dd7255a1e, "-1.7282453501858931e+267"),
    (0xf6a68cedac233a95, "-3.550442059653537e+263"),
    (0x3bd21fc20861b880, "1.5351671260934577e-20"),
    (0xe9a9a4e94d9c6fcf, "-9.814677307716685e+200"),
    (0xd60bc6a3bed9d9b2, "-3.1852035453680368e+106"),
    (0x06b44fac234c1399, "2.2916062981826227e-276"),
    (0xb15f4941bd8cda34, "-7.08293547144917e-71"),
    (0x2ad607fc99ada873, "2.459119303854843e-102"),
    (0xc9b76b6f506e2a86, "-1.3370266429795474e+47"),
    (0xc3854d4349db74dd, "-191869629062093730"),
    (0x9ec2c43c7295af28, "-1.668540293426966e-160"),
    (0xbfb9021e2fe42357, "-0.09768856686799886"),
    (0xb4b19120f5ace09a, "-7.164339432887305e-55"),
    (0x2589eb895bd96261, "7.478731342200341e-128"),
    (0xc6ffc4fd02e0eb5c, "-1.0309787532055772e+34"),
    (0xafcb225a5a3f847b, "-1.8307456918140365e-78"),
    (0x2c814011f6e1cfee, "2.5843264139168927e-94"),
    (0xdf74c82010c62025, "-6.802675017834855e+151"),
    (0xf7a510d0e5b682d0, "-2.1736108420844882e+268"),
    (0x86bc32ccc671afdf, "-3.1814787562058048e-276"),
    (0x0792b684d06e0c82, "3.4591270419841216e-272"),
    (0x06ef8adc129e3229, "2.8470100082973434e-275"),
    (0x4e38c39715f5a984, "6.676367699717682e+68"),
    (0xb30123758c82c983, "-5.207676978823573e-63"),
    (0xca72ebd6b99bea56, "-4.4245489330240785e+50"),
    (0xa144f0c0dd1e5c6d, "-2.0470950522490042e-148"),
    (0x8764545d0d08d378, "-4.697443842152819e-273"),
    (0x3d9d3a5457b53567, "6.645643558403267e-12"),
    (0x5510fb42f0b2fd6a, "5.942844271559742e+101"),
    (0x199caab70947a2f1, "2.635376904535398e-185"),
    (0x4fb04eb48519b4ac, "7.376065551107437e+75"),
    (0x23c8ab1755a9978b, "2.6514999974650485e-136"),
    (0xdb6a7639a04c19be, "-2.347836080250098e+132"),
    (0x8c8b5c7b492349b5, "-3.0572406003579336e-248"),
    (0x60976aaff6854120, "2.0093904165162808e+157"),
    (0x74c9853dcfc2d3ef, "3.7420974840751684e+254"),
    (0xe91161c171e55352, "-1.2993117369227807e+198"),
    (0x24a5cea097c6d4b9, "3.84034802310418e-132"),
    (0xce708f6b048facd4, "-7.143405263352603e+69"),
    (0xc0a888c492ca0e93, "-3140.3839324133673"),
    (0x0b6822a421b5fe26, "1.0287424724246968e-253"),
    (0x7f4c8a20619807fd, "1.5657154836662275e+305"),
    (0xfd354eef4d586bc8, "-1.3608973384657762e+295"),
    (0xbe58e98c88d2ab77, "-2.3201387967682277e-8"),
    (0x4e09fe83a7c2ae3a, "8.760026857718937e+67"),
    (0x151ae117a8d0e781, "5.232634706379135e-207"),
    (0x897db565510e31fc, "-5.896654087824719e-263"),
    (0x7c02feea295e4e9b, "2.3139956397004113e+289"),
    (0x8f1f15a6ca31378e, "-7.637801366206933e-236"),
    (0x9ddc6f386a43b745, "-7.715201745085773e-165"),
    (0x97bdf4146462f370, "-2.5645398987830546e-194"),
    (0x9606d96ea3c0dbff, "-1.457560773821507e-202"),
    (0x1d5edf912cdcae22, "3.2722433848672404e-167"),
    (0x88f17162c65efb49, "-1.352392826721842e-265"),
    (0x3f64d1fbe23fe424, "0.0025415343861792273"),
    (0x75c16b41e7c477a3, "1.673897514767398e+259"),
    (0x9b88a494322965f6, "-4.86501426833936e-176"),
    (0x1720cf09b271778d, "2.810787753015638e-197"),
    (0x9c9fa30b10b97818, "-8.18646148603992e-171"),
    (0xf308698ef08d8587, "-1.3335086505781476e+246"),
    (0xac561db34118f30a, "-4.1416012515858684e-95"),
    (0x27bf2dbb362e3011, "3.0909988081366384e-117"),
    (0xb3ac4b6c6d43634c, "-8.80389362642246e-60"),
    (0x33ce05d1f5bea9ab, "3.7366387698274447e-59"),
    (0x7f9e1bb7449e295e, "5.285685707975417e+306"),
    (0xb293079c797068d5, "-4.517452582676491e-65"),
    (0x2ad6f13c542499c0, "2.5608193604182542e-102"),
    (0xe14cae8a66dcc80f, "-5.040505575035255e+160"),
    (0x5e6ab36278311cf2, "6.668235034689858e+146"),
    (0x888e2526263fa5d9, "-1.8259580040839802e-267"),
    (0x00eb139a372b4f74, "3.0846654614813485e-304"),
    (0x0b3fee28d4f304b3, "1.7012448335417481e-254"),
    (0x963a209ed5a321c6, "-1.3333356790517986e-201"),
    (0x3fce712de313ab1d, "0.23782895648704364"),
    (0xfa4ddd8ed7a0f868, "-1.3552992329165939e+281"),
    (0xbdbd5f4b2e76c397, "-2.671389750380081e-11"),
    (0x5136227eb832cbda, "1.6797063538892752e+83"),
    (0x234a508de9587ca1, "1.1048666372132293e-138"),
    (0x4c337d01377e489c, "1.223300405975568e+59"),
    (0xda084cb7f16ba8bb, "-5.140303890988994e+125"),
    (0x802f973888dfef2e, "-8.786456872957204e-308"),
    (0x01d524c3fc325e65, "7.893026842402031e-300"),
    (0xa572c52735df3410, "-2.7078782003624143e-128"),
    (0xabbc9c4b37c7981f, "-5.232234678856057e-98"),
    (0xf6ef472b87ff9fc2, "-7.879257470514243e+264"),
    (0x51af9eed4381d469, "3.0714379885175004e+85"),
    (0x695e5fc60ab6eec4, "3.6327941438052503e+199"),
    (0x1e50e46ec216b5c3, "1.1733606576237985e-162"),
    (0xad9519b508103196, "-4.143357076961732e-89"),
    (0x5e4ffed4cf27a2ad, "1.9976340384953476e+146"),
    (0xf89eac7215c3ecb8, "-1.0371010225222264e+273"),
    (0x739b3600645f65a7, "7.610269491517635e+248"),
    (0x159df36aadcd38aa, "1.4926296321240614e-204"),
    (0x1a1a449ec688cd31, "6.182020510088309e-183"),
    (0xd428400cb4c3e1ec, "-2.589904987303059e+97"),
    (0x795e0ef879464bcb, "4.1627759467475946e+276"),
];

#[test]
fn number_to_string_matches_js() {
    for (bits, expected) in NUMBER_STRINGS {
        let x = f64::from_bits(*bits);
        assert_eq!(number_to_string(x), *expected, "bits {bits:#018x} ({x:e})");
        let negated = match expected.strip_prefix('-') {
            Some(positive) => positive.to_owned(),
            None if *expected == "0" => "0".to_owned(),
            None => format!("-{expected}"),
        };
        assert_eq!(number_to_string(-x), negated);
    }
    assert_eq!(number_to_string(f64::NAN), "NaN");
    assert_eq!(number_to_string(f64::INFINITY), "Infinity");
    assert_eq!(number_to_string(f64::NEG_INFINITY), "-Infinity");
    assert_eq!(number_to_string(-1.5), "-1.5");
    assert_eq!(number_to_string(-1e21), "-1e+21");
    assert_eq!(number_to_string(-1e-7), "-1e-7");
}

#[test]
fn pretty_output_parses_back_to_the_same_value() {
    for (input, _) in ROUND_TRIPS {
        let v = parse(input).unwrap();
        let again = parse(&stringify_pretty(&v)).unwrap();
        // Infinity became null, so compare the second round trip.
        assert_eq!(stringify_pretty(&again), stringify_pretty(&v));
    }
}

//! Expected bytes below were produced by msgpackr 2.0.5 itself:
//! `new Packr({useRecords: true, moreTypes: true}).pack(value)` (hex), or `(length, sha256)` for
//! large outputs. The JS that built each value is quoted next to its Rust twin.

use sha2::{Digest, Sha256};

use super::*;

// --- oracle output (msgpackr 2.0.5) ---------------------------------------------------------

const NUMBERS: &str = "dc0021003fcc40cc7fcc80ccffcd0100cdffffce00010000ceffffffffcb41f0000000000000ffe0d0dfd080d1ff7fd18000d2ffff7fffd280000000cbc1e0000000200000cb3ff800000000000000cb7ff8000000000000cb7ff0000000000000cbfff0000000000000cb4279352255afb000cb4340000000000000cd81edcb41f4000000000000cb3fb999999999999acbbff8000000000000cb7e37e43c8800759ccb0000000000000001";
const NUMBERS_IN_RECORD: &str = "d4724097a9636865636b65644174a46d6f6465a473697a65a36e6567a5736d616c6ca6736c6f747479a462797465cb4279352255afb000cd81edcb41f0000000000000d0df3fcc40ccff";
const STRINGS: &str = "9aa0bf61616161616161616161616161616161616161616161616161616161616161d9206161616161616161616161616161616161616161616161616161616161616161d9ff616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161da010061616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161bee282ace282ace282ace282ace282ace282ace282ace282ace282ace282acd921e282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282acb668c3a96c6c6f2077c3b6726c6420e29c9320f09f9880d9ffe282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282acda0102e282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ace282ac";
const STR_65535: (usize, &str) = (
    65538,
    "ae606c3d6aaca8b43b24feb4aae3e5ab4088edb6d99d254d366f00e08f287c3d",
);
const STR_65536: (usize, &str) = (
    65541,
    "5f97d047d40a13f57389f8c7817f5afd69fe1e7739a305850eb23c5adb54674a",
);
const STR_MULTIBYTE_70000: (usize, &str) = (
    70005,
    "b7d2f5eea700f5147cb7b1f1870e3e566b87e1b6ded4841c665aa163b7aa77b3",
);
const INT_LIKE_KEYS: &str = "d4724093a132a162a161a1780102";
const MANIFEST_BIG: &str = "d47240dc0015a46e616d65a776657273696f6eab6465736372697074696f6ea46d61696ea57479706573a76c6963656e7365a8686f6d6570616765a362696eab6469726563746f72696573a7656e67696e6573a26f73a3637075a46c696263ac646570656e64656e63696573b46f7074696f6e616c446570656e64656e63696573b070656572446570656e64656e63696573b470656572446570656e64656e636965734d657461b362756e646c6564446570656e64656e63696573a766756e64696e67a773637269707473a66e6573746564aa4073636f70652f706b67ac312e322e332d626574612e34bec39c6ec3af63c3b864c3a920e29c9320e697a5e69cace8aa9e20f09f9a80a8696e6465782e6a73aa696e6465782e642e7473a34d4954da012c787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878d4724192a161a162a4612e6a73a4622e6a73d4724290d4724391a46e6f6465a43e3d313892a56c696e7578a664617277696e91a3783634c0d4724492a3666f6fa3626172a65e312e302e30a67e322e302e304244a65e312e302e30a67e322e302e3044d4724591a86f7074696f6e616cc345c29093d4724692a474797065a375726ca6676974687562b468747470733a2f2f6769746875622e636f6d2f7846ae6f70656e636f6c6c656374697665ac68747470733a2f2f6f632f78d4724791a375726ca175d4724892a7696e7374616c6cab706f7374696e7374616c6cb06e6f64652d6779702072656275696c64c09391d4724991a16101924902d4724a91a1629249034290";
const WRAP: &str = "dc004cd4724091a26b3000d4724191a26b3101d4724291a26b3202d4724391a26b3303d4724491a26b3404d4724591a26b3505d4724691a26b3606d4724791a26b3707d4724891a26b3808d4724991a26b3909d4724a91a36b31300ad4724b91a36b31310bd4724c91a36b31320cd4724d91a36b31330dd4724e91a36b31340ed4724f91a36b31350fd4725091a36b313610d4725191a36b313711d4725291a36b313812d4725391a36b313913d4725491a36b323014d4725591a36b323115d4725691a36b323216d4725791a36b323317d4725891a36b323418d4725991a36b323519d4725a91a36b32361ad4725b91a36b32371bd4725c91a36b32381cd4725d91a36b32391dd4725e91a36b33301ed4725f91a36b33311fd4726091a36b333220d4726191a36b333321d4726291a36b333422d4726391a36b333523d4726491a36b333624d4726591a36b333725d4726691a36b333826d4726791a36b333927d4726891a36b343028d4726991a36b343129d4726a91a36b34322ad4726b91a36b34332bd4726c91a36b34342cd4726d91a36b34352dd4726e91a36b34362ed4726f91a36b34372fd4727091a36b343830d4727191a36b343931d4727291a36b353032d4727391a36b353133d4727491a36b353234d4727591a36b353335d4727691a36b353436d4727791a36b353537d4727891a36b353638d4727991a36b353739d4727a91a36b35383ad4727b91a36b35393bd4727c91a36b363000d4727d91a36b363101d4727e91a36b363202d4727f91a36b363303d4724091a36b363404d4724191a36b363505d4724291a36b363606d4724391a36b363707d4724491a36b363808d4724591a36b363909d4724691a26b30a161d4724791a26b31a162d4724891a26b32a16345a164d4724991a26b35a165d4724a91a26b36d4724b91a26b37a166";
const STRESS: (usize, &str) = (
    1631,
    "6dca619cdf4bb74b8e63399264441520f4594faed23205b064bde52556f52544",
);
const UNDEF: &str = "93d4000082d40000d4000001c0d4724091a161d40000";
const MAPS: &str = "938501a161c3d4724091a17801c090d4724191a1790280cbbff80000000000004002de0010a26b3000a26b3101a26b3202a26b3303a26b3404a26b3505a26b3606a26b3707a26b3808a26b3909a36b31300aa36b31310ba36b31320ca36b31330da36b31340ea36b31350fdc0010000102030405060708090a0b0c0d0e0f";
const EMPTY: &str = "96d4724090409080a0d4724191a16140";
const ARRAY_70000: (usize, &str) = (
    70005,
    "1d7c492176649a270a6fc8945d40fd032d038673eac262eeb2315a8c02b2fd37",
);
const MAP_70000: (usize, &str) = (
    288613,
    "6696d2fd65f01e5579a5e76258ee225754e32cdc2a073007cbd562c309ccc3f2",
);

// --- helpers ----------------------------------------------------------------------------------

pub(crate) fn unhex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

pub(crate) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn sha256(b: &[u8]) -> String {
    hex(&Sha256::digest(b))
}

fn s(x: &str) -> Value {
    Value::String(x.to_string())
}

fn n(x: f64) -> Value {
    Value::Number(x)
}

fn obj(fields: Vec<(&str, Value)>) -> Value {
    Value::Object(
        fields
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

fn arr(items: Vec<Value>) -> Value {
    Value::Array(items)
}

fn map(entries: Vec<(Value, Value)>) -> Value {
    Value::Map(entries)
}

/// Encodes to the oracle's bytes, and those bytes decode back to the same value.
fn assert_oracle(v: &Value, expected: &str) {
    assert_eq!(hex(&encode(v)), expected);
    assert_eq!(&decode(&unhex(expected)).unwrap(), v);
}

fn assert_oracle_hash(v: &Value, (len, digest): (usize, &str)) {
    let bytes = encode(v);
    assert_eq!(bytes.len(), len);
    assert_eq!(sha256(&bytes), digest);
    assert_eq!(&decode(&bytes).unwrap(), v);
}

fn err_kind(bytes: &str) -> DecodeErrorKind {
    decode(&unhex(bytes)).unwrap_err().kind
}

// --- encoding ---------------------------------------------------------------------------------

#[test]
fn number_boundaries() {
    // [0,63,64,127,128,255,256,65535,65536,2**32-1,2**32,-1,-32,-33,-128,-129,-32768,-32769,
    //  -(2**31),-(2**31)-1,1.5,-0,NaN,Infinity,-Infinity,1732250000123,2**53,0o100755,5*2**30,
    //  0.1,-1.5,1e300,5e-324]
    let p32 = 2f64.powi(32);
    let p31 = 2f64.powi(31);
    let nums = [
        0.0,
        63.0,
        64.0,
        127.0,
        128.0,
        255.0,
        256.0,
        65535.0,
        65536.0,
        p32 - 1.0,
        p32,
        -1.0,
        -32.0,
        -33.0,
        -128.0,
        -129.0,
        -32768.0,
        -32769.0,
        -p31,
        -p31 - 1.0,
        1.5,
        -0.0,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        1732250000123.0,
        2f64.powi(53),
        0o100755 as f64,
        5.0 * 2f64.powi(30),
        0.1,
        -1.5,
        1e300,
        5e-324,
    ];
    let v = arr(nums.iter().map(|&x| n(x)).collect());
    assert_eq!(hex(&encode(&v)), NUMBERS);
    // NaN != NaN, so compare the decoded numbers bit-wise (-0 decodes as 0, like msgpackr).
    let Value::Array(back) = decode(&unhex(NUMBERS)).unwrap() else {
        panic!("not an array")
    };
    for (got, want) in back.iter().zip(nums) {
        let Value::Number(got) = got else {
            panic!("not a number")
        };
        let want = if want == 0.0 { 0.0 } else { want };
        assert_eq!(got.to_bits(), want.to_bits());
    }
}

#[test]
fn numbers_never_use_64_bit_ints_or_float32() {
    let bytes = encode(&n(2f64.powi(40)));
    assert_eq!(bytes[0], 0xcb);
    let bytes = encode(&n(-(2f64.powi(40))));
    assert_eq!(bytes[0], 0xcb);
    let bytes = encode(&n(1.25));
    assert_eq!(bytes[0], 0xcb);
}

#[test]
fn numbers_in_record() {
    // {checkedAt: 1732250000123, mode: 0o100755, size: 2**32, neg: -33, small: 63, slotty: 64,
    //  byte: 255}
    let v = obj(vec![
        ("checkedAt", n(1732250000123.0)),
        ("mode", n(0o100755 as f64)),
        ("size", n(2f64.powi(32))),
        ("neg", n(-33.0)),
        ("small", n(63.0)),
        ("slotty", n(64.0)),
        ("byte", n(255.0)),
    ]);
    assert_oracle(&v, NUMBERS_IN_RECORD);
}

#[test]
fn strings_get_minimal_headers() {
    // ['', 'a'*31, 'a'*32, 'a'*255, 'a'*256, '€'*10, '€'*11, 'héllo wörld ✓ 😀', '€'*85, '€'*86]
    let v = arr(vec![
        s(""),
        s(&"a".repeat(31)),
        s(&"a".repeat(32)),
        s(&"a".repeat(255)),
        s(&"a".repeat(256)),
        s(&"€".repeat(10)),
        s(&"€".repeat(11)),
        s("héllo wörld ✓ 😀"),
        s(&"€".repeat(85)),
        s(&"€".repeat(86)),
    ]);
    assert_oracle(&v, STRINGS);
    assert_oracle_hash(&s(&"a".repeat(65535)), STR_65535);
    assert_oracle_hash(&s(&"a".repeat(65536)), STR_65536);
    assert_oracle_hash(&s(&"ü".repeat(35000)), STR_MULTIBYTE_70000);
}

#[test]
fn integer_like_keys_follow_the_given_js_property_order() {
    // JSON.parse('{"b":1,"2":"x","a":2}') has keys ["2", "b", "a"].
    let v = obj(vec![("2", s("x")), ("b", n(1.0)), ("a", n(2.0))]);
    assert_oracle(&v, INT_LIKE_KEYS);
}

#[test]
fn big_manifest() {
    // 21 keys (array16 key list), nested arrays of objects, empty objects and arrays, null,
    // unicode, a 300-byte string, repeated shapes. See the JS literal in the module docs above.
    let dep_pair = || obj(vec![("foo", s("^1.0.0")), ("bar", s("~2.0.0"))]);
    let v = obj(vec![
        ("name", s("@scope/pkg")),
        ("version", s("1.2.3-beta.4")),
        ("description", s("Ünïcødé ✓ 日本語 🚀")),
        ("main", s("index.js")),
        ("types", s("index.d.ts")),
        ("license", s("MIT")),
        ("homepage", s(&"x".repeat(300))),
        ("bin", obj(vec![("a", s("a.js")), ("b", s("b.js"))])),
        ("directories", obj(vec![])),
        ("engines", obj(vec![("node", s(">=18"))])),
        ("os", arr(vec![s("linux"), s("darwin")])),
        ("cpu", arr(vec![s("x64")])),
        ("libc", Value::Null),
        ("dependencies", dep_pair()),
        ("optionalDependencies", obj(vec![])),
        ("peerDependencies", dep_pair()),
        (
            "peerDependenciesMeta",
            obj(vec![
                ("foo", obj(vec![("optional", Value::Bool(true))])),
                ("bar", obj(vec![("optional", Value::Bool(false))])),
            ]),
        ),
        ("bundledDependencies", arr(vec![])),
        (
            "funding",
            arr(vec![
                obj(vec![
                    ("type", s("github")),
                    ("url", s("https://github.com/x")),
                ]),
                obj(vec![
                    ("type", s("opencollective")),
                    ("url", s("https://oc/x")),
                ]),
                obj(vec![("url", s("u"))]),
            ]),
        ),
        (
            "scripts",
            obj(vec![
                ("install", s("node-gyp rebuild")),
                ("postinstall", Value::Null),
            ]),
        ),
        (
            "nested",
            arr(vec![
                arr(vec![obj(vec![("a", n(1.0))])]),
                arr(vec![
                    obj(vec![("a", n(2.0))]),
                    obj(vec![(
                        "b",
                        arr(vec![obj(vec![("a", n(3.0))]), obj(vec![])]),
                    )]),
                ]),
                arr(vec![]),
            ]),
        ),
    ]);
    assert_oracle(&v, MANIFEST_BIG);
}

#[test]
fn slot_wrap_around_redefines_overwritten_shapes() {
    // for i in 0..70: {['k'+i]: i % 60}; then {k0:'a'}, {k1:'b'}, {k2:'c'}, {k69:'d'},
    // {k5:'e'}, {k6: {k7: 'f'}}
    let mut items: Vec<Value> = (0..70)
        .map(|i| obj(vec![(&format!("k{i}"), n((i % 60) as f64))]))
        .collect();
    items.push(obj(vec![("k0", s("a"))]));
    items.push(obj(vec![("k1", s("b"))]));
    items.push(obj(vec![("k2", s("c"))]));
    items.push(obj(vec![("k69", s("d"))]));
    items.push(obj(vec![("k5", s("e"))]));
    items.push(obj(vec![("k6", obj(vec![("k7", s("f"))]))]));
    assert_oracle(&arr(items), WRAP);
}

/// JS-double LCG, so Rust and the oracle script draw the same sequence.
struct JsLcg(f64);

impl JsLcg {
    fn next(&mut self, m: f64) -> f64 {
        self.0 = (self.0 * 1103515245.0 + 12345.0) % 2147483648.0;
        self.0 % m
    }
}

#[test]
fn many_shapes_in_pseudo_random_order() {
    // let seed = 12345; rnd(n) = (seed = (seed*1103515245+12345) % 2**31) % n;
    // for j in 0..400: i = rnd(100); {['s'+i]: j % 50, nest: rnd(7) === 0 ? {['n'+rnd(80)]: null} : null}
    let mut rng = JsLcg(12345.0);
    let items = (0..400)
        .map(|j| {
            let i = rng.next(100.0);
            let nest = if rng.next(7.0) == 0.0 {
                obj(vec![(&format!("n{}", rng.next(80.0)), Value::Null)])
            } else {
                Value::Null
            };
            obj(vec![(&format!("s{i}"), n((j % 50) as f64)), ("nest", nest)])
        })
        .collect();
    assert_oracle_hash(&arr(items), STRESS);
}

#[test]
fn undefined_everywhere() {
    // [undefined, new Map([[undefined, undefined], [1, null]]), {a: undefined}]
    let v = arr(vec![
        Value::Undefined,
        map(vec![
            (Value::Undefined, Value::Undefined),
            (n(1.0), Value::Null),
        ]),
        obj(vec![("a", Value::Undefined)]),
    ]);
    assert_oracle(&v, UNDEF);
}

#[test]
fn maps_and_collection_headers() {
    // [new Map([[1,'a'], [true,{x:1}], [null,[]], [{y:2}, new Map()], [-1.5,{x:2}]]),
    //  new Map(16 × ['k'+i, i]), Array(16) of i]
    let v = arr(vec![
        map(vec![
            (n(1.0), s("a")),
            (Value::Bool(true), obj(vec![("x", n(1.0))])),
            (Value::Null, arr(vec![])),
            (obj(vec![("y", n(2.0))]), map(vec![])),
            (n(-1.5), obj(vec![("x", n(2.0))])),
        ]),
        map((0..16)
            .map(|i| (s(&format!("k{i}")), n(i as f64)))
            .collect()),
        arr((0..16).map(|i| n(i as f64)).collect()),
    ]);
    assert_oracle(&v, MAPS);
    // Array(70000) of i % 3; new Map(70000 × [i, true])
    assert_oracle_hash(
        &arr((0..70000).map(|i| n((i % 3) as f64)).collect()),
        ARRAY_70000,
    );
    assert_oracle_hash(
        &map((0..70000)
            .map(|i| (n(i as f64), Value::Bool(true)))
            .collect()),
        MAP_70000,
    );
}

#[test]
fn empty_things() {
    // [{}, {}, [], new Map(), '', {a: {}}]
    let v = arr(vec![
        obj(vec![]),
        obj(vec![]),
        arr(vec![]),
        map(vec![]),
        s(""),
        obj(vec![("a", obj(vec![]))]),
    ]);
    assert_oracle(&v, EMPTY);
}

#[test]
fn streaming_encoder_matches_value_encoder() {
    let v = obj(vec![
        ("x", obj(vec![("a", n(1.0))])),
        ("y", obj(vec![("a", n(2.0))])),
    ]);
    let mut enc = Encoder::default();
    enc.record(["x", "y"].into_iter());
    enc.record(["a"].into_iter());
    enc.number(1.0);
    enc.record(["a"].into_iter());
    enc.number(2.0);
    assert_eq!(enc.into_bytes(), encode(&v));
}

// --- decoding tolerance -----------------------------------------------------------------------

#[test]
fn bare_slot_bytes_without_definition_are_integers() {
    assert_eq!(decode(&unhex("40")).unwrap(), n(64.0));
    assert_eq!(
        decode(&unhex("93 40 7f 3f")).unwrap(),
        arr(vec![n(64.0), n(127.0), n(63.0)])
    );
    // Once slot 0x40 is defined, 0x40 is a record reference.
    assert_eq!(
        decode(&unhex("93 41 d4724091a16101 40 05")).unwrap(),
        arr(vec![
            n(65.0),
            obj(vec![("a", n(1.0))]),
            obj(vec![("a", n(5.0))])
        ])
    );
}

#[test]
fn slot_redefinition_wins_from_then_on() {
    // [{a:1}, {b:2}, ref 0x40 → {b:3}]  (checked with msgpackr's unpack)
    assert_eq!(
        decode(&unhex("93 d4724091a16101 d4724091a16202 40 03")).unwrap(),
        arr(vec![
            obj(vec![("a", n(1.0))]),
            obj(vec![("b", n(2.0))]),
            obj(vec![("b", n(3.0))])
        ])
    );
}

#[test]
fn record_definitions_anywhere_and_in_any_form() {
    // Nested in a map value and as a map key, zero-field definitions, key list as array16/32
    // with str8/str16/str32 keys, slot byte with high bits (msgpackr keeps the low six).
    let v = decode(&unhex("82 a1 6b d4724090 d4724191a17801 d4724291a17902")).unwrap();
    assert_eq!(
        v,
        map(vec![
            (s("k"), obj(vec![])),
            (obj(vec![("x", n(1.0))]), obj(vec![("y", n(2.0))])),
        ])
    );
    let v = decode(&unhex("92 d47205 dc0002 d90161 da000162 01 02 45 03 04")).unwrap();
    let ab = |a, b| obj(vec![("a", n(a)), ("b", n(b))]);
    assert_eq!(v, arr(vec![ab(1.0, 2.0), ab(3.0, 4.0)]));
    let v = decode(&unhex("d472c5 dd00000001 db0000000161 07")).unwrap();
    assert_eq!(v, obj(vec![("a", n(7.0))]));
}

#[test]
fn duplicate_record_keys_keep_first_position_and_last_value() {
    // msgpackr: d4724092a161a16101 02 → {a: 2}
    assert_eq!(
        decode(&unhex("d4724093a161a162a161 01 02 03")).unwrap(),
        obj(vec![("a", n(3.0)), ("b", n(2.0))])
    );
}

#[test]
fn every_numeric_encoding() {
    let cases = [
        ("05", 5.0),
        ("cc05", 5.0),
        ("cd0005", 5.0),
        ("ce00000005", 5.0),
        ("cf0000000100000000", 4294967296.0),
        ("cfffffffffffffffff", 18446744073709551615.0),
        ("d0fb", -5.0),
        ("d1fffb", -5.0),
        ("d2fffffffb", -5.0),
        ("d3ffffffffffffffff", -1.0),
        ("d38000000000000000", -9223372036854775808.0),
        ("fb", -5.0),
        // float32 1.1: msgpackr returns the exact float32 value 1.100000023841858.
        ("ca3f8ccccd", 1.100000023841858),
        ("cb3ff199999999999a", 1.1),
    ];
    for (bytes, want) in cases {
        assert_eq!(decode(&unhex(bytes)).unwrap(), n(want), "{bytes}");
    }
}

#[test]
fn undefined_ext_and_non_minimal_headers() {
    assert_eq!(decode(&unhex("d40000")).unwrap(), Value::Undefined);
    // msgpackr ignores the payload of ext type 0, whatever its size.
    assert_eq!(decode(&unhex("d40001")).unwrap(), Value::Undefined);
    assert_eq!(decode(&unhex("c7010005")).unwrap(), Value::Undefined);
    assert_eq!(decode(&unhex("db0000000161")).unwrap(), s("a"));
    assert_eq!(decode(&unhex("da000161")).unwrap(), s("a"));
    assert_eq!(
        decode(&unhex("dc0003010203")).unwrap(),
        arr(vec![n(1.0), n(2.0), n(3.0)])
    );
    assert_eq!(
        decode(&unhex("dd000000020101")).unwrap(),
        arr(vec![n(1.0), n(1.0)])
    );
    assert_eq!(
        decode(&unhex("de0001a16101")).unwrap(),
        map(vec![(s("a"), n(1.0))])
    );
    assert_eq!(
        decode(&unhex("df00000001c0c3")).unwrap(),
        map(vec![(Value::Null, Value::Bool(true))])
    );
}

#[test]
fn invalid_utf8_is_replaced_not_rejected() {
    assert_eq!(decode(&unhex("a2 61ff")).unwrap(), s("a\u{fffd}"));
}

#[test]
fn rejections() {
    assert_eq!(err_kind("c0c0"), DecodeErrorKind::TrailingBytes);
    assert_eq!(err_kind("d4724091a1610145"), DecodeErrorKind::TrailingBytes);
    assert_eq!(err_kind(""), DecodeErrorKind::UnexpectedEnd);
    assert_eq!(err_kind("d9"), DecodeErrorKind::UnexpectedEnd);
    assert_eq!(err_kind("d4724091a16140"), DecodeErrorKind::UnexpectedEnd);
    assert_eq!(err_kind("c1"), DecodeErrorKind::ReservedByte);
    assert_eq!(err_kind("c403010203"), DecodeErrorKind::Binary);
    assert_eq!(err_kind("d40100"), DecodeErrorKind::UnsupportedExt(1));
    assert_eq!(
        err_kind("d6ff00000000"),
        DecodeErrorKind::UnsupportedExt(-1)
    );
    assert_eq!(err_kind("d4724001"), DecodeErrorKind::BadRecordDefinition);
    assert_eq!(err_kind("d472409101"), DecodeErrorKind::BadRecordDefinition);
    let e = decode(&unhex("c0c0")).unwrap_err();
    assert_eq!(e.offset, 1);
    assert_eq!(
        e.to_string(),
        "invalid msgpackr data at byte 1: data read, but end of buffer not reached"
    );
}

#[test]
fn huge_length_fields_do_not_allocate() {
    for bytes in [
        "ddffffffff",
        "dfffffffff",
        "dbffffffff",
        "d47240ddffffffff",
        "c9ffffffff00",
    ] {
        assert_eq!(err_kind(bytes), DecodeErrorKind::UnexpectedEnd, "{bytes}");
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let mut bytes = vec![0x91; 100_000];
    bytes.push(0xc0);
    assert_eq!(decode(&bytes).unwrap_err().kind, DecodeErrorKind::TooDeep);
    let mut ok = vec![0x91; 100];
    ok.push(0xc0);
    assert!(decode(&ok).is_ok());
}

#[test]
fn every_truncation_of_every_vector_is_an_error() {
    for vector in [
        NUMBERS,
        NUMBERS_IN_RECORD,
        STRINGS,
        MANIFEST_BIG,
        WRAP,
        UNDEF,
        MAPS,
        EMPTY,
    ] {
        let bytes = unhex(vector);
        for end in 0..bytes.len() {
            let e = decode(&bytes[..end]).unwrap_err();
            assert_eq!(
                e.kind,
                DecodeErrorKind::UnexpectedEnd,
                "{vector} cut at {end}"
            );
        }
    }
}

/// Found while writing the fuzz checks (`src/fuzzing.rs`): each key of a record definition was
/// compared with all keys before it, and with a repeated key each field was looked up by a scan,
/// so one definition of n keys cost O(n²): 1.4 s for 40,000 keys (a 235 KB row), 3.5 s with a
/// repeat, in a release build. Quadratic, these two take minutes in a debug build.
#[test]
fn records_with_many_keys_decode_in_linear_time() {
    let keys = 100_000;
    for repeat in [false, true] {
        let len = keys + usize::from(repeat);
        let mut bytes = vec![0xd4, 0x72, 0x40, 0xdd];
        bytes.extend_from_slice(&(len as u32).to_be_bytes());
        for i in 0..keys {
            let key = format!("{i:x}");
            bytes.push(0xa0 | key.len() as u8);
            bytes.extend_from_slice(key.as_bytes());
        }
        if repeat {
            bytes.extend_from_slice(&[0xa1, b'0']);
        }
        // Small integers below the slot bytes as values: field i holds i % 32.
        bytes.extend((0..len).map(|i| (i % 32) as u8));
        let Value::Object(fields) = decode(&bytes).unwrap() else {
            panic!("not an object")
        };
        assert_eq!(fields.len(), keys);
        let first = if repeat { keys % 32 } else { 0 };
        assert_eq!(fields[0], ("0".to_string(), n(first as f64)));
        assert_eq!(fields[keys - 1].0, format!("{:x}", keys - 1));
    }
}

/// Found with the decoder's twin above: the encoder looked up every record's shape by scanning
/// the hashes of all shapes seen so far, so re-encoding a row with n distinct shapes (as
/// `with_side_effects` does with a stored row) cost O(n²): 0.4 s for 40,000 shapes (a 400 KB
/// row) in a release build.
#[test]
fn values_with_many_shapes_encode_in_linear_time() {
    let shapes = 100_000;
    let objects = (0..shapes).map(|i| obj(vec![(&format!("{i:x}"), Value::Null)]));
    // Every shape twice: the second time, long after its slot was taken over, it is redefined.
    let value = arr(objects.clone().chain(objects).collect());
    let bytes = encode(&value);
    let key_bytes: usize = (0..shapes).map(|i| format!("{i:x}").len()).sum();
    // Each object a definition `d4 72 <slot> 91 <fixstr key> c0`; the array header `dd <u32>`.
    assert_eq!(bytes.len(), 5 + 2 * (shapes * 6 + key_bytes));
    assert_eq!(decode(&bytes).unwrap(), value);
}

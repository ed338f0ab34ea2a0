//! The Lua libraries Redis 7.0 scripts rely on (cjson, cmsgpack, struct):
//! encodings, round trips and error messages, each expected reply as Redis
//! 7.0.15 (Debian's redis-server) gave it for the same script.

#![allow(clippy::expect_used)]

use crate::common::{error_text, int, Client, TestServer};
use redis_protocol::resp3::types::OwnedFrame;

/// A reply as compact text: bulk strings as they are, integers in decimal,
/// `nil`, `+status`, `-error` (without Cairn's and Redis's `script: ...`
/// suffix), arrays as `[a,b]`.
fn render(frame: &OwnedFrame) -> String {
    match frame {
        OwnedFrame::BlobString { data, .. } => String::from_utf8_lossy(data).into_owned(),
        OwnedFrame::SimpleString { data, .. } => format!("+{}", String::from_utf8_lossy(data)),
        OwnedFrame::Number { data, .. } => data.to_string(),
        OwnedFrame::Null => "nil".to_string(),
        OwnedFrame::Array { data, .. } => format!("[{}]", data.iter().map(render).collect::<Vec<_>>().join(",")),
        OwnedFrame::SimpleError { .. } | OwnedFrame::BlobError { .. } => {
            let text = error_text(frame);
            format!("-{}", text.split(" script: ").next().unwrap_or_default())
        }
        other => format!("{other:?}"),
    }
}

fn eval(c: &mut Client, script: &str) -> String {
    render(&c.cmd(&["EVAL", script, "0"]))
}

/// (script, what Redis 7.0.15 replied). Scripts that change a cjson
/// setting restore it, since each thread that runs scripts has its own.
const CASES: &[(&str, &str)] = &[
    (r##"return cjson.encode({1,2,3,{a=1}})"##, r##"[1,2,3,{"a":1}]"##),
    (r##"return cjson.encode({[1]=1,[3]=3})"##, r##"[1,null,3]"##),
    (
        r##"return cjson.encode({[1]=1,[20]=3})"##,
        r##"-ERR user_script:1: Cannot serialise table: excessively sparse array"##,
    ),
    (r##"return cjson.encode({a=0/0})"##, r##"-ERR user_script:1: Cannot serialise number: must not be NaN or Inf"##),
    (r##"return cjson.encode('a"/\\\n\1\127é')"##, r##""a\"\/\\\n\u0001\u007fé""##),
    (r##"return cjson.encode(1/3)"##, r##"0.33333333333333"##),
    (r##"return cjson.encode(123456789012345)"##, r##"1.2345678901234e+14"##),
    (r##"return cjson.encode({[1.5]=1})"##, r##"{"1.5":1}"##),
    (
        r##"return cjson.encode({[true]=1})"##,
        r##"-ERR user_script:1: Cannot serialise boolean: table key must be a number or string"##,
    ),
    (r##"return cjson.encode(cjson.null)"##, r##"null"##),
    (
        r##"return cjson.encode(function() end)"##,
        r##"-ERR user_script:1: Cannot serialise function: type not supported"##,
    ),
    (
        r##"return table.concat(cjson.decode('[0.0, -5e3, -1, 0.3e-3, 1023.2, 0e10]'), ' ')"##,
        r##"0 -5000 -1 0.0003 1023.2 0"##,
    ),
    (
        r##"return cjson.decode('[1,2')"##,
        r##"-ERR user_script:1: Expected comma or array end but found T_END at character 5"##,
    ),
    (
        r##"return cjson.decode('{"a":}')"##,
        r##"-ERR user_script:1: Expected value but found T_OBJ_END at character 6"##,
    ),
    (
        r##"return cjson.decode('{1:2}')"##,
        r##"-ERR user_script:1: Expected object key string but found T_NUMBER at character 2"##,
    ),
    (r##"return cjson.decode('"\\ud83d\\ude00"')"##, r##"😀"##),
    (
        r##"return cjson.decode('"\\ud83d"')"##,
        r##"-ERR user_script:1: Expected value but found invalid unicode escape code at character 2"##,
    ),
    (
        r##"return cjson.decode('"\\q"')"##,
        r##"-ERR user_script:1: Expected value but found invalid escape code at character 2"##,
    ),
    (
        r##"return cjson.decode('"abc')"##,
        r##"-ERR user_script:1: Expected value but found unexpected end of string at character 5"##,
    ),
    (
        r##"return cjson.decode('[[[1]]]  x')"##,
        r##"-ERR user_script:1: Expected the end but found invalid token at character 10"##,
    ),
    (
        r##"return {cjson.decode('0x10'), cjson.decode('+5'), cjson.encode(cjson.decode('inf'))}"##,
        r##"-ERR user_script:1: Cannot serialise number: must not be NaN or Inf"##,
    ),
    (
        r##"cjson.decode_max_depth(2) local ok, e = pcall(cjson.decode, '[[[1]]]') cjson.decode_max_depth(1000) return e"##,
        r##"Found too many nested data structures (3) at character 3"##,
    ),
    (
        r##"cjson.encode_max_depth(2) local ok, e = pcall(cjson.encode, {{{1}}}) cjson.encode_max_depth(1000) return e"##,
        r##"Cannot serialise, excessive nesting (3)"##,
    ),
    (r##"return {cjson.encode_sparse_array()}"##, r##"[nil,2,10]"##),
    (r##"return {cjson.encode_invalid_numbers()}"##, r##"[nil]"##),
    (
        r##"return cjson.encode_number_precision(20)"##,
        r##"-ERR user_script:1: bad argument #1 to 'encode_number_precision' (expected integer between 1 and 14)"##,
    ),
    (
        r##"return cjson.encode_keep_buffer('maybe')"##,
        r##"-ERR user_script:1: bad argument #1 to 'encode_keep_buffer' (invalid option 'maybe')"##,
    ),
    (r##"return cjson.encode()"##, r##"-ERR user_script:1: bad argument #1 to 'encode' (expected 1 argument)"##),
    (
        r##"return cjson.decode('[1]', 2)"##,
        r##"-ERR user_script:1: bad argument #1 to 'decode' (expected 1 argument)"##,
    ),
    (
        r##"return cjson.decode({})"##,
        r##"-ERR user_script:1: bad argument #1 to 'decode' (string expected, got table)"##,
    ),
    (
        r##"return cjson.encode_max_depth(1,2)"##,
        r##"-ERR user_script:1: bad argument #2 to 'encode_max_depth' (found too many arguments)"##,
    ),
    (
        r##"return {cjson.encode_sparse_array(false, 'x')}"##,
        r##"-ERR user_script:1: bad argument #2 to 'encode_sparse_array' (number expected, got string)"##,
    ),
    (r##"return cjson.encode({})"##, r##"{}"##),
    (r##"return cjson.encode({[0]=1})"##, r##"{"0":1}"##),
    (r##"return cjson.encode({1,nil,3})"##, r##"[1,null,3]"##),
    (
        r##"return cjson.decode('nul')"##,
        r##"-ERR user_script:1: Expected value but found invalid token at character 1"##,
    ),
    (r##"return cjson.decode('')"##, r##"-ERR user_script:1: Expected value but found T_END at character 1"##),
    (r##"return cjson.decode(' \0 ')"##, r##"-ERR user_script:1: JSON parser does not support UTF-16 or UTF-32"##),
    (
        r##"return cjson.decode('-')"##,
        r##"-ERR user_script:1: Expected value but found invalid number at character 1"##,
    ),
    (r##"local t = cjson.decode('{"a":null}') return tostring(t.a == cjson.null)"##, r##"true"##),
    (r##"return type(cjson.null)"##, r##"userdata"##),
    (r##"return cjson._VERSION"##, r##"2.1.0"##),
    (r##"return cjson.encode({a={b={c={}}}, [2]=5})"##, r##"{"a":{"b":{"c":{}}},"2":5}"##),
    (r##"return cjson.decode('[1,2,3]')[3]"##, r##"3"##),
    (
        r##"cjson.encode_invalid_numbers('null') local r = cjson.encode({1/0, 0/0}) cjson.encode_invalid_numbers(false) return r"##,
        r##"[null,null]"##,
    ),
    (
        r##"cjson.encode_invalid_numbers(true) local r = cjson.encode({1/0, -1/0, 0/0}) cjson.encode_invalid_numbers(false) return r"##,
        r##"[inf,-inf,nan]"##,
    ),
    (
        r##"cjson.encode_number_precision(3) local r = cjson.encode(3.14159) cjson.encode_number_precision(14) return r"##,
        r##"3.14"##,
    ),
    (
        r##"return {cjson.decode('0x10'), cjson.decode('+5'), tostring(cjson.decode('-Infinity')), cjson.decode('007')}"##,
        r##"[16,5,-inf,7]"##,
    ),
    (
        r##"return cjson.decode('[1,2,]')"##,
        r##"-ERR user_script:1: Expected value but found T_ARR_END at character 6"##,
    ),
    (
        r##"return cjson.decode('{"a":1,}')"##,
        r##"-ERR user_script:1: Expected object key string but found T_OBJ_END at character 8"##,
    ),
    (
        r##"return cjson.decode('{"a" 1}')"##,
        r##"-ERR user_script:1: Expected colon but found T_NUMBER at character 6"##,
    ),
    (r##"return cjson.decode('"\\u00e9\\u0041\\/"')"##, r##"éA/"##),
    (
        r##"return cjson.decode('"\\u12"')"##,
        r##"-ERR user_script:1: Expected value but found invalid unicode escape code at character 2"##,
    ),
    (
        r##"return cjson.decode('"\\udc00\\ud800"')"##,
        r##"-ERR user_script:1: Expected value but found invalid unicode escape code at character 2"##,
    ),
    (
        r##"return cjson.encode({s="x", n=-1.5e-7, b=true, t={}, a={1,{2}}})"##,
        r##"{"a":[1,[2]],"s":"x","b":true,"t":{},"n":-1.5e-07}"##,
    ),
    (
        r##"return cjson.encode({[1]=1,[2]=2,[4]=4,[7]=7,[11]=11})"##,
        r##"-ERR user_script:1: Cannot serialise table: excessively sparse array"##,
    ),
    (
        r##"cjson.encode_sparse_array(true) local r = cjson.encode({[1]=1,[20]=3}) cjson.encode_sparse_array(false) return r"##,
        r##"{"1":1,"20":3}"##,
    ),
    (
        r##"local r = {cjson.encode_sparse_array(nil, 3, 5)} cjson.encode_sparse_array(false, 2, 10) return r"##,
        r##"[nil,3,5]"##,
    ),
    (r##"return {cjson.encode_sparse_array(false, 2, 10)}"##, r##"[nil,2,10]"##),
    (r##"return cjson.encode({cjson.new().encode({1})})"##, r##"["[1]"]"##),
    (
        r##"local c = cjson.new() c.encode_max_depth(1) return {pcall(c.encode, {{}}), cjson.encode({{}})}"##,
        r##"[nil,[{}]]"##,
    ),
    (r##"return cjson.decode(123)"##, r##"123"##),
    (r##"return cjson.encode(nil)"##, r##"null"##),
    (r##"return cjson.encode({1, 2, [3.0]=3})"##, r##"[1,2,3]"##),
    (
        r##"return cjson.decode('truex')"##,
        r##"-ERR user_script:1: Expected the end but found invalid token at character 5"##,
    ),
    (r##"return cjson.decode('  true  ')"##, r##"1"##),
    (
        r##"local function hex(s) local h = '' for i = 1, #s do h = h .. string.format('%02x', s:byte(i)) end return h end return hex(cmsgpack.pack(0.1, -1099511627776, 1, 127, 128, 255, 256, 65535, 65536, 4294967295, 4294967296, -1, -32, -33, -128, -129, -32768, -32769, -2147483648, -2147483649, 1.5, 2^63, -2^63, 2^64, 0/0, 1/0, -0.0))"##,
        r##"cb3fb999999999999ad3ffffff0000000000017fcc80ccffcd0100cdffffce00010000ceffffffffcf0000000100000000ffe0d0dfd080d1ff7fd18000d2ffff7fffd280000000d3ffffffff7fffffffca3fc00000ca5f000000d38000000000000000ca5f800000cbfff8000000000000ca7f80000000"##,
    ),
    (
        r##"local function hex(s) local h = '' for i = 1, #s do h = h .. string.format('%02x', s:byte(i)) end return h end return hex(cmsgpack.pack(string.rep('z', 300)):sub(1, 8))"##,
        r##"da012c7a7a7a7a7a"##,
    ),
    (
        r##"local function hex(s) local h = '' for i = 1, #s do h = h .. string.format('%02x', s:byte(i)) end return h end local a = {x=nil,y=5} local b = {x=a} a['x'] = b return hex(cmsgpack.pack(a))"##,
        r##"82a17905a17881a17882a17905a17881a17882a17905a17881a17882a17905a17881a17882a17905a17881a17882a17905a17881a17882a17905a17881a17882a17905a17881a178c0"##,
    ),
    (
        r##"return cmsgpack.pack()"##,
        r##"-ERR user_script:1: bad argument #0 to 'pack' (MessagePack pack needs input.)"##,
    ),
    (r##"return {cmsgpack.unpack(cmsgpack.pack(1, 'a', {1,2,{3}}, {k='v'}))}"##, r##"[1,a,[1,2,[3]],[]]"##),
    (r##"return {cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3))}"##, r##"[1,1]"##),
    (r##"return {cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3), 2)}"##, r##"[-1,3]"##),
    (r##"return {cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 2, 1)}"##, r##"[-1,2,3]"##),
    (r##"return {cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 0, 0)}"##, r##"[1,2,3]"##),
    (
        r##"return {cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), -1)}"##,
        r##"-ERR user_script:1: Invalid request to unpack with offset of 0 and limit of 3."##,
    ),
    (
        r##"return {cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3), 10)}"##,
        r##"-ERR user_script:1: Start offset 10 greater than input length 3."##,
    ),
    (r##"return {cmsgpack.unpack('\193')}"##, r##"-ERR user_script:1: Bad data format in input."##),
    (r##"return {cmsgpack.unpack('\146\1')}"##, r##"-ERR user_script:1: Missing bytes in input."##),
    (r##"return {cmsgpack.unpack('\217\5ab')}"##, r##"-ERR user_script:1: Missing bytes in input."##),
    (r##"return {cmsgpack.unpack('')}"##, r##"[]"##),
    (
        r##"return {cmsgpack.unpack()}"##,
        r##"-ERR user_script:1: bad argument #1 to 'unpack' (string expected, got no value)"##,
    ),
    (
        r##"return {cmsgpack.unpack_limit('\1')}"##,
        r##"-ERR user_script:1: bad argument #2 to 'unpack_limit' (number expected, got no value)"##,
    ),
    (r##"return {cmsgpack.unpack('\129\192\1')}"##, r##"-ERR table index is nil"##),
    (r##"return #{cmsgpack.unpack(string.rep('\1', 7990))}"##, r##"7990"##),
    (r##"return {pcall(cmsgpack.unpack, '\193')}"##, r##"[nil,Bad data format in input.]"##),
    (r##"return tostring(cmsgpack.unpack('\203\127\248\0\0\0\0\0\0'))"##, r##"nan"##),
    (r##"return {cmsgpack.unpack('\207\255\255\255\255\255\255\255\255')}"##, r##"[-1]"##),
    (r##"return tostring(cmsgpack.unpack('\207\255\255\255\255\255\255\255\255'))"##, r##"-1"##),
    (r##"return tostring(cmsgpack.unpack('\211\255\255\255\255\255\255\255\254'))"##, r##"-2"##),
    (r##"return {cmsgpack.unpack('\202\63\192\0\0')}"##, r##"[1]"##),
    (r##"return {cmsgpack.unpack('\196\1a')}"##, r##"-ERR user_script:1: Bad data format in input."##),
    (r##"return cmsgpack._VERSION"##, r##"lua-cmsgpack 0.4.0"##),
    (r##"local t = cmsgpack.unpack(cmsgpack.pack({a={b={1,2}}, c='d'})) return {t.a.b[2], t.c}"##, r##"[2,d]"##),
    (
        r##"return {cmsgpack.unpack(string.rep('\145', 5000) .. '\1')}"##,
        r##"-ERR user_script:1: stack overflow (in function mp_decode_to_lua_array)"##,
    ),
    (
        r##"local function hex(s) local h = '' for i = 1, #s do h = h .. string.format('%02x', s:byte(i)) end return h end return hex(struct.pack('>bBhHlLTiI', -1, 255, -2, 65535, -3, 7, 9, -4, 5))"##,
        r##"fffffffefffffffffffffffffffd00000000000000070000000000000009fffffffc00000005"##,
    ),
    (
        r##"local function hex(s) local h = '' for i = 1, #s do h = h .. string.format('%02x', s:byte(i)) end return h end return hex(struct.pack('<i3I5i12', -1, 300, -2))"##,
        r##"ffffff2c01000000feffffffffffffff00000000"##,
    ),
    (
        r##"local function hex(s) local h = '' for i = 1, #s do h = h .. string.format('%02x', s:byte(i)) end return h end return hex(struct.pack('>fd<fd', 1.5, 0.1, -2.25, 1e300))"##,
        r##"3fc000003fb999999999999a000010c09c7500883ce4377e"##,
    ),
    (
        r##"local function hex(s) local h = '' for i = 1, #s do h = h .. string.format('%02x', s:byte(i)) end return h end return hex(struct.pack('!4 b i b d', 1, 2, 3, 4))"##,
        r##"0100000002000000030000000000000000001040"##,
    ),
    (
        r##"local function hex(s) local h = '' for i = 1, #s do h = h .. string.format('%02x', s:byte(i)) end return h end return hex(struct.pack('!bxhc3sc0', 1, 2, 'abcdef', 'hi', 'xyz'))"##,
        r##"0100020061626368690078797a"##,
    ),
    (
        r##"return {struct.unpack('>bBhHlLTiI', struct.pack('>bBhHlLTiI', -1, 255, -2, 65535, -3, 7, 9, -4, 5))}"##,
        r##"[-1,255,-2,65535,-3,7,9,-4,5,39]"##,
    ),
    (r##"return {struct.unpack('<i3I5i12', struct.pack('<i3I5i12', -1, 300, -2))}"##, r##"[-1,300,-2,21]"##),
    (r##"return {struct.unpack('>fd', struct.pack('>fd', 1.5, 0.1))}"##, r##"[1,0,13]"##),
    (r##"return {struct.unpack('!4 b i b d', struct.pack('!4 b i b d', 1, 2, 3, 4))}"##, r##"[1,2,3,4,21]"##),
    (r##"return {struct.unpack('sbc0', struct.pack('sbc0', 'hello', 3, 'abc'))}"##, r##"[hello,abc,11]"##),
    (
        r##"return {struct.unpack('i', 'abc')}"##,
        r##"-ERR user_script:1: bad argument #2 to 'unpack' (data string too short)"##,
    ),
    (
        r##"return {struct.unpack('i', 'abcd', 0)}"##,
        r##"-ERR user_script:1: bad argument #3 to 'unpack' (offset must be 1 or greater)"##,
    ),
    (r##"return {struct.unpack('i', 'abcdabcd', 5)}"##, r##"[1684234849,9]"##),
    (
        r##"return {struct.unpack('i', 'abcdabcd', -1)}"##,
        r##"-ERR user_script:1: bad argument #2 to 'unpack' (data string too short)"##,
    ),
    (r##"return {struct.unpack('c0', 'abc')}"##, r##"-ERR user_script:1: format 'c0' needs a previous size"##),
    (r##"return {struct.unpack('s', 'abc')}"##, r##"-ERR user_script:1: unfinished string in data"##),
    (
        r##"return {struct.unpack('bc0', '\5abc')}"##,
        r##"-ERR user_script:1: bad argument #2 to 'unpack' (data string too short)"##,
    ),
    (
        r##"return struct.pack('z', 1)"##,
        r##"-ERR user_script:1: bad argument #1 to 'pack' (invalid format option 'z')"##,
    ),
    (r##"return struct.pack('i40', 1)"##, r##"-ERR user_script:1: integral size 40 is larger than limit of 32"##),
    (r##"return struct.pack('!3', 1)"##, r##"-ERR user_script:1: alignment 3 is not a power of 2"##),
    (r##"return struct.pack('i99999999999', 1)"##, r##"-ERR user_script:1: integral size overflow"##),
    (r##"return struct.pack('c5', 'abc')"##, r##"-ERR user_script:1: bad argument #3 to 'pack' (string too short)"##),
    (r##"return struct.pack('i')"##, r##"-ERR user_script:1: bad argument #2 to 'pack' (number expected, got nil)"##),
    (
        r##"return struct.pack('i', 'x')"##,
        r##"-ERR user_script:1: bad argument #2 to 'pack' (number expected, got string)"##,
    ),
    (r##"return struct.pack()"##, r##"-ERR user_script:1: bad argument #1 to 'pack' (string expected, got no value)"##),
    (
        r##"return {struct.size('>bBhHlLTiI'), struct.size('!8bd'), struct.size('c7'), struct.size('zq'), struct.size('i3i3')}"##,
        r##"[38,16,7,0,6]"##,
    ),
    (
        r##"return struct.size('s')"##,
        r##"-ERR user_script:1: bad argument #1 to 'size' (option 's' has no fixed size)"##,
    ),
    (
        r##"return struct.size('c0')"##,
        r##"-ERR user_script:1: bad argument #1 to 'size' (option 'c0' has no fixed size)"##,
    ),
    (r##"return struct.size('%')"##, r##"-ERR user_script:1: bad argument #1 to 'size' (invalid format option '%')"##),
    (r##"return struct.size('!3')"##, r##"-ERR user_script:1: alignment 3 is not a power of 2"##),
    (r##"return {struct.unpack('>I2', '\1\2\3', 2)}"##, r##"[515,4]"##),
    (r##"return {struct.unpack('<i16', string.rep('\255', 16))}"##, r##"[-1,17]"##),
    (r##"return {struct.unpack('<i9', '\1\0\0\0\0\0\0\0\128')}"##, r##"[1,10]"##),
    (r##"return {struct.unpack('>i9', '\128\0\0\0\0\0\0\0\1')}"##, r##"[1,10]"##),
    (
        r##"local function hex(s) local h = '' for i = 1, #s do h = h .. string.format('%02x', s:byte(i)) end return h end return hex(struct.pack('<i10', -1))"##,
        r##"ffffffffffffffff0000"##,
    ),
    (r##"return tostring(struct.unpack('<L', struct.pack('<L', 2^63)))"##, r##"9.2233720368548e+18"##),
    (
        r##"local function hex(s) local h = '' for i = 1, #s do h = h .. string.format('%02x', s:byte(i)) end return h end return hex(struct.pack('b', 300))"##,
        r##"2c"##,
    ),
    (r##"return {pcall(struct.pack, 'y')}"##, r##"[nil,bad argument #1 to '?' (invalid format option 'y')]"##),
    (
        r##"return {struct.unpack('x', '')}"##,
        r##"-ERR user_script:1: bad argument #2 to 'unpack' (data string too short)"##,
    ),
    (r##"return #struct.pack('x\0z')"##, r##"1"##),
];

#[test]
fn libraries_reply_as_redis_7_0_does() {
    let server = TestServer::start();
    let mut c = server.client();
    let mut mismatches = Vec::new();
    for (script, expected) in CASES {
        let got = eval(&mut c, script);
        if got != *expected {
            mismatches.push(format!("{script}\n  expected {expected}\n  got      {got}"));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn round_trips() {
    let server = TestServer::start();
    let mut c = server.client();
    let json = r#"
        local v = {s = 'a\"b\\c/\n\1é', n = -12.5, big = 2^40, t = true, f = false,
                   a = {1, 'two', {3}}, o = {x = {y = {}}}}
        local d = cjson.decode(cjson.encode(v))
        assert(d.s == v.s and d.n == v.n and d.big == v.big and d.t and d.f == false)
        assert(d.a[1] == 1 and d.a[2] == 'two' and d.a[3][1] == 3 and next(d.o.x.y) == nil)
        return cjson.encode(cjson.decode('{"k":[1,2,{"z":null}]}'))"#;
    assert_eq!(eval(&mut c, json), r#"{"k":[1,2,{"z":null}]}"#);
    let msgpack = r#"
        local v = {s = string.rep('x', 70000), i = -3147483648, d = 0.1, f = 1.5, a = {1, {2, {3}}}, m = {k = 'v'}}
        local d = cmsgpack.unpack(cmsgpack.pack(v))
        assert(d.s == v.s and d.i == v.i and d.d == v.d and d.f == v.f)
        assert(d.a[2][2][1] == 3 and d.m.k == 'v')
        return 'ok'"#;
    assert_eq!(eval(&mut c, msgpack), "ok");
    let structs = r#"
        local s = struct.pack('>!4 b h i l d s c3', -1, 300, -70000, 2^40, 0.25, 'str', 'abc')
        local b, h, i, l, d, str, c3, next = struct.unpack('>!4 b h i l d s c3', s)
        assert(b == -1 and h == 300 and i == -70000 and l == 2^40 and d == 0.25 and str == 'str' and c3 == 'abc')
        return next == #s + 1 and struct.size('>!4 b h i l d') or 'bad'"#;
    assert_eq!(eval(&mut c, structs), "24");
}

#[test]
fn libraries_are_read_only_and_survive_pcall() {
    let server = TestServer::start();
    let mut c = server.client();
    for lib in ["cjson.encode", "cmsgpack.pack", "struct.pack"] {
        let reply = eval(&mut c, &format!("{lib} = function() return 1 end"));
        assert!(reply.contains("Attempt to modify a readonly table"), "{lib}: {reply}");
    }
    // Errors are Lua strings, as C libraries raise them; through pcall the
    // function has no name, as in Redis.
    assert_eq!(
        eval(&mut c, "local ok, e = pcall(struct.pack, 'z') return type(e) .. ': ' .. e"),
        "string: bad argument #1 to '?' (invalid format option 'z')"
    );
}

#[test]
fn many_values_within_luas_stack() {
    let server = TestServer::start();
    let mut c = server.client();
    // Redis takes 7,999 values from unpack, and as many redis.call arguments.
    let unpacked = "return #{cmsgpack.unpack(string.rep('\\1', 7999))}";
    assert_eq!(c.cmd(&["EVAL", unpacked, "0"]), int(7999));
    let too_many = eval(&mut c, "return #{cmsgpack.unpack(string.rep('\\1', 8000))}");
    assert!(too_many.contains("stack overflow (too many return values at once"), "{too_many}");
    let lpush = "local a = {} for i = 1, 7999 do a[i] = i end return redis.call('lpush', 'l', unpack(a))";
    assert_eq!(c.cmd(&["EVAL", lpush, "0"]), int(7999));
    assert_eq!(c.cmd(&["LINDEX", "l", "0"]), crate::common::bulk("7999"));
    // Arguments keep their precision (%.17g), as Redis writes them.
    let set = "redis.call('set', 'n', 9007199254740991) redis.call('set', 'f', 0.1) return {redis.call('get', 'n'), redis.call('get', 'f')}";
    assert_eq!(eval(&mut c, set), "[9007199254740991,0.10000000000000001]");
}

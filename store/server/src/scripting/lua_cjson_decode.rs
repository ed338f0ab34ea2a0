//! `cjson.decode`: lua-cjson 2.1.0's parser. JSON null is `cjson.null`;
//! numbers go through `strtod` (so with `decode_invalid_numbers` on, the
//! default, `0x10`, `+1`, `inf` and `nan` are read too); the input ends at
//! its first NUL byte, as a C string; errors are lua-cjson's
//! (`Expected comma or array end but found T_END at character 5`).

use mlua::{Lua, MultiValue, Table, Value};

use super::lua_cjson::{null, Config};
use super::lua_lib::{check_bytes, LibResult, Raise, MAX_STACK_SLOTS};
use super::lua_number::strtod;

/// A lexical token and the 0-based offset it starts at.
#[derive(Debug)]
enum Token {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    String(Vec<u8>),
    Number(f64),
    Boolean(bool),
    Null,
    Colon,
    Comma,
    End,
    /// lua-cjson's token error text (`invalid token`, `invalid number`, ...).
    Error(&'static str),
}

impl Token {
    /// The name lua-cjson prints for what it found.
    fn name(&self) -> &'static str {
        match self {
            Token::ObjBegin => "T_OBJ_BEGIN",
            Token::ObjEnd => "T_OBJ_END",
            Token::ArrBegin => "T_ARR_BEGIN",
            Token::ArrEnd => "T_ARR_END",
            Token::String(_) => "T_STRING",
            Token::Number(_) => "T_NUMBER",
            Token::Boolean(_) => "T_BOOLEAN",
            Token::Null => "T_NULL",
            Token::Colon => "T_COLON",
            Token::Comma => "T_COMMA",
            Token::End => "T_END",
            Token::Error(text) => text,
        }
    }
}

/// `cjson.decode(text)`.
pub fn decode(lua: &Lua, cfg: &Config, args: MultiValue) -> LibResult<MultiValue> {
    if args.len() != 1 {
        return Err(Raise::argument(1, "decode", "expected 1 argument"));
    }
    let data = check_bytes(&args, 1, "decode")?;
    if data.len() >= 2 && (data[0] == 0 || data[1] == 0) {
        return Err(Raise::message("JSON parser does not support UTF-16 or UTF-32"));
    }
    let mut parser = Parser { lua, cfg, data: &data, pos: 0, depth: 0, slots: 1 };
    let (token, at) = parser.next_token();
    let value = parser.value(token, at)?;
    let (token, at) = parser.next_token();
    if !matches!(token, Token::End) {
        return Err(expected("the end", &token, at));
    }
    Ok(MultiValue::from_iter([value]))
}

fn expected(what: &str, found: &Token, at: usize) -> Raise {
    Raise::message(format!("Expected {what} but found {} at character {}", found.name(), at + 1))
}

struct Parser<'a> {
    lua: &'a Lua,
    cfg: &'a Config,
    data: &'a [u8],
    pos: usize,
    depth: i64,
    /// Lua stack slots the C parser would hold (it stops at Lua's limit).
    slots: usize,
}

impl Parser<'_> {
    /// The byte at `i`, NUL past the end (the input is a C string).
    fn at(&self, i: usize) -> u8 {
        self.data.get(i).copied().unwrap_or(0)
    }

    fn rest(&self) -> &[u8] {
        let rest = &self.data[self.pos.min(self.data.len())..];
        let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
        &rest[..end]
    }

    fn next_token(&mut self) -> (Token, usize) {
        while matches!(self.at(self.pos), b' ' | b'\t' | b'\n' | b'\r') {
            self.pos += 1;
        }
        let start = self.pos;
        let single = match self.at(start) {
            b'{' => Some(Token::ObjBegin),
            b'}' => Some(Token::ObjEnd),
            b'[' => Some(Token::ArrBegin),
            b']' => Some(Token::ArrEnd),
            b',' => Some(Token::Comma),
            b':' => Some(Token::Colon),
            0 => return (Token::End, start),
            _ => None,
        };
        if let Some(token) = single {
            self.pos += 1;
            return (token, start);
        }
        self.other_token(start)
    }

    fn other_token(&mut self, start: usize) -> (Token, usize) {
        let ch = self.at(start);
        if ch == b'"' {
            return self.string_token(start);
        }
        if ch == b'-' || ch.is_ascii_digit() {
            if !self.cfg.decode_invalid_numbers && self.is_invalid_number() {
                return (Token::Error("invalid number"), start);
            }
            return self.number_token(start);
        }
        let words: [(&[u8], Token); 3] =
            [(b"true", Token::Boolean(true)), (b"false", Token::Boolean(false)), (b"null", Token::Null)];
        if matches!(ch, b't' | b'f' | b'n') {
            for (word, token) in words {
                if self.rest().starts_with(word) {
                    self.pos += word.len();
                    return (token, start);
                }
            }
        }
        if matches!(ch, b'i' | b'I' | b'n' | b'N' | b'+') && self.cfg.decode_invalid_numbers && self.is_invalid_number()
        {
            return self.number_token(start);
        }
        (Token::Error("invalid token"), start)
    }

    /// lua-cjson's `json_is_invalid_number`: numbers strict JSON refuses
    /// (leading `+`, hexadecimal, leading zeros, inf, nan).
    fn is_invalid_number(&self) -> bool {
        let mut p = self.rest();
        match p.first() {
            Some(b'+') => return true,
            Some(b'-') => p = &p[1..],
            _ => {}
        }
        match p.first().copied().unwrap_or(0) {
            b'0' => {
                let next = p.get(1).copied().unwrap_or(0);
                (next | 0x20) == b'x' || next.is_ascii_digit()
            }
            c if c <= b'9' => false,
            _ => {
                let head = &p[..p.len().min(3)];
                head.eq_ignore_ascii_case(b"inf") || head.eq_ignore_ascii_case(b"nan")
            }
        }
    }

    fn number_token(&mut self, start: usize) -> (Token, usize) {
        match strtod(self.rest()) {
            Some((value, used)) => {
                self.pos += used;
                (Token::Number(value), start)
            }
            None => (Token::Error("invalid number"), start),
        }
    }

    fn string_token(&mut self, start: usize) -> (Token, usize) {
        self.pos += 1;
        let mut out = Vec::new();
        loop {
            let ch = self.at(self.pos);
            match ch {
                b'"' => break,
                0 => return (Token::Error("unexpected end of string"), self.pos),
                b'\\' => {
                    let escaped = match self.at(self.pos + 1) {
                        b'"' => b'"',
                        b'\\' => b'\\',
                        b'/' => b'/',
                        b'b' => b'\x08',
                        b't' => b'\t',
                        b'n' => b'\n',
                        b'f' => b'\x0c',
                        b'r' => b'\r',
                        b'u' => match self.unicode_escape() {
                            Some((codepoint, len)) => {
                                push_utf8(&mut out, codepoint);
                                self.pos += len;
                                continue;
                            }
                            None => return (Token::Error("invalid unicode escape code"), self.pos),
                        },
                        _ => return (Token::Error("invalid escape code"), self.pos),
                    };
                    out.push(escaped);
                    self.pos += 2;
                }
                _ => {
                    out.push(ch);
                    self.pos += 1;
                }
            }
        }
        self.pos += 1;
        (Token::String(out), start)
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        (0..4).try_fold(0u32, |acc, i| Some(acc * 16 + (self.at(at + i) as char).to_digit(16)?))
    }

    /// The code point of the `\uXXXX` escape at `pos` (a UTF-16 surrogate
    /// pair takes two escapes) and the bytes it spans.
    fn unicode_escape(&self) -> Option<(u32, usize)> {
        let first = self.hex4(self.pos + 2)?;
        if first & 0xF800 != 0xD800 {
            return Some((first, 6));
        }
        // A surrogate: it must be a high one followed by a low one.
        if first & 0x400 != 0 || self.at(self.pos + 6) != b'\\' || self.at(self.pos + 7) != b'u' {
            return None;
        }
        let low = self.hex4(self.pos + 8)?;
        if low & 0xFC00 != 0xDC00 {
            return None;
        }
        Some(((((first & 0x3FF) << 10) | (low & 0x3FF)) + 0x10000, 12))
    }

    fn value(&mut self, token: Token, at: usize) -> LibResult<Value> {
        Ok(match token {
            Token::String(bytes) => Value::String(self.lua.create_string(&bytes)?),
            Token::Number(n) => Value::Number(n),
            Token::Boolean(b) => Value::Boolean(b),
            Token::Null => null(),
            Token::ObjBegin => Value::Table(self.object()?),
            Token::ArrBegin => Value::Table(self.array()?),
            other => return Err(expected("value", &other, at)),
        })
    }

    /// `json_decode_descend`: one level deeper, within `decode_max_depth`
    /// and the Lua stack (`slots` more).
    fn descend(&mut self, slots: usize) -> LibResult<()> {
        self.depth += 1;
        self.slots += slots;
        if self.depth > i64::from(self.cfg.decode_max_depth) || self.slots > MAX_STACK_SLOTS {
            return Err(Raise::message(format!(
                "Found too many nested data structures ({}) at character {}",
                self.depth, self.pos
            )));
        }
        Ok(())
    }

    fn ascend(&mut self, slots: usize) {
        self.depth -= 1;
        self.slots -= slots;
    }

    fn object(&mut self) -> LibResult<Table> {
        self.descend(3)?;
        let table = self.lua.create_table()?;
        let (mut token, mut at) = self.next_token();
        if matches!(token, Token::ObjEnd) {
            self.ascend(3);
            return Ok(table);
        }
        loop {
            let Token::String(key) = token else {
                return Err(expected("object key string", &token, at));
            };
            let (colon, colon_at) = self.next_token();
            if !matches!(colon, Token::Colon) {
                return Err(expected("colon", &colon, colon_at));
            }
            let (next, next_at) = self.next_token();
            let value = self.value(next, next_at)?;
            table.raw_set(self.lua.create_string(&key)?, value)?;
            let (end, end_at) = self.next_token();
            match end {
                Token::ObjEnd => {
                    self.ascend(3);
                    return Ok(table);
                }
                Token::Comma => (token, at) = self.next_token(),
                other => return Err(expected("comma or object end", &other, end_at)),
            }
        }
    }

    fn array(&mut self) -> LibResult<Table> {
        self.descend(2)?;
        let table = self.lua.create_table()?;
        let (mut token, mut at) = self.next_token();
        if matches!(token, Token::ArrEnd) {
            self.ascend(2);
            return Ok(table);
        }
        for i in 1i64.. {
            let value = self.value(token, at)?;
            table.raw_set(i, value)?;
            let (end, end_at) = self.next_token();
            match end {
                Token::ArrEnd => break,
                Token::Comma => (token, at) = self.next_token(),
                other => return Err(expected("comma or array end", &other, end_at)),
            }
        }
        self.ascend(2);
        Ok(table)
    }
}

/// lua-cjson's UTF-8 encoding of a code point (surrogates included).
fn push_utf8(out: &mut Vec<u8>, cp: u32) {
    if cp <= 0x7F {
        out.push(cp as u8);
    } else if cp <= 0x7FF {
        out.extend_from_slice(&[0xC0 | (cp >> 6) as u8, 0x80 | (cp & 0x3F) as u8]);
    } else if cp <= 0xFFFF {
        out.extend_from_slice(&[0xE0 | (cp >> 12) as u8, 0x80 | ((cp >> 6) & 0x3F) as u8, 0x80 | (cp & 0x3F) as u8]);
    } else {
        out.extend_from_slice(&[
            0xF0 | (cp >> 18) as u8,
            0x80 | ((cp >> 12) & 0x3F) as u8,
            0x80 | ((cp >> 6) & 0x3F) as u8,
            0x80 | (cp & 0x3F) as u8,
        ]);
    }
}

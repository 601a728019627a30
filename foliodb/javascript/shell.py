"""The JavaScript every context starts with: the shell's BSON types and the
conversion of values between BSON and JavaScript.

Values cross the boundary as JSON text (the engine's fastest path). JSON
has no dates, 64-bit integers and the like, so those travel as *tagged*
objects ``{"\\u0000": kind, "v": ...}``: no BSON field name can hold a NUL
byte, so a tag never collides with a document's own fields. Kinds:

====  ===============================  =====================================
kind  BSON                             JavaScript
====  ===============================  =====================================
D     date                             ``Date``
l     int64 (``v``: decimal string)    ``NumberLong``
i     int32 (JavaScript to BSON only)  ``NumberInt``
f     double NaN / Infinity            ``NaN`` / ``Infinity`` / ``-Infinity``
o     ObjectId (``v``: hex)            ``ObjectId``
m     decimal128 (``v``: string)       ``NumberDecimal``
b     binary (``v``: base64, ``s``)    ``BinData``
r     regex (``v``, ``f``: flags)      ``RegExp``
t     timestamp (``v``: t, ``i``)      ``Timestamp``
n, x  MinKey, MaxKey                   ``MinKey``, ``MaxKey``
c     JavaScript code (``v``)          ``Code``
====  ===============================  =====================================

As in mongod, a BSON int32 or double becomes a plain JavaScript number, and
every plain number comes back as a double; ``undefined`` comes back as null.
"""

from __future__ import annotations

# Shell globals follow the legacy mongo shell that mongod's own engine
# embeds: https://www.mongodb.com/docs/manual/reference/method/#constructors
PRELUDE = r"""
"use strict";
var __emits = [];
function emit(k, v) {
  if (arguments.length > 2) throw new Error("emit takes 2 args");
  __emits.push([k === undefined ? null : k, v === undefined ? null : v]);
}
function __hex(n, width) { var s = n.toString(16); while (s.length < width) s = "0" + s; return s; }
var __oidCounter = Math.floor(Math.random() * 0xffffff), __oidProcess = "";
for (var __i = 0; __i < 5; __i++) __oidProcess += __hex(Math.floor(Math.random() * 256), 2);
function ObjectId(h) {
  if (!(this instanceof ObjectId)) return new ObjectId(h);
  if (h === undefined) {
    __oidCounter = (__oidCounter + 1) % 0x1000000;
    h = __hex(Math.floor(Date.now() / 1000), 8) + __oidProcess + __hex(__oidCounter, 6);
  }
  if (typeof h !== "string" || !/^[0-9a-fA-F]{24}$/.test(h)) throw new Error("invalid object id: length");
  this.str = h.toLowerCase();
}
ObjectId.prototype.toString = function () { return 'ObjectId("' + this.str + '")'; };
ObjectId.prototype.tojson = ObjectId.prototype.toString;
ObjectId.prototype.valueOf = function () { return this.str; };
ObjectId.prototype.toHexString = function () { return this.str; };
ObjectId.prototype.equals = function (o) { return o instanceof ObjectId && o.str === this.str; };
ObjectId.prototype.getTimestamp = function () { return new Date(parseInt(this.str.substr(0, 8), 16) * 1000); };
function ISODate(s) { return s === undefined ? new Date() : new Date(s); }
function NumberLong(v) {
  if (!(this instanceof NumberLong)) return new NumberLong(v);
  this.__s = v === undefined ? "0" : typeof v === "string" ? v : String(Math.trunc(Number(v)));
  if (!/^-?[0-9]+$/.test(this.__s)) throw new Error("could not convert \"" + v + "\" to NumberLong");
  this.floatApprox = Number(this.__s);
}
NumberLong.prototype.valueOf = function () { return this.floatApprox; };
NumberLong.prototype.toNumber = NumberLong.prototype.valueOf;
NumberLong.prototype.toString = function () {
  return Math.abs(this.floatApprox) <= 2147483647 ? "NumberLong(" + this.__s + ")" : 'NumberLong("' + this.__s + '")';
};
NumberLong.prototype.tojson = NumberLong.prototype.toString;
function NumberInt(v) {
  if (!(this instanceof NumberInt)) return new NumberInt(v);
  this.__v = v === undefined ? 0 : Number(v) | 0;
}
NumberInt.prototype.valueOf = function () { return this.__v; };
NumberInt.prototype.toNumber = NumberInt.prototype.valueOf;
NumberInt.prototype.toString = function () { return "NumberInt(" + this.__v + ")"; };
NumberInt.prototype.tojson = NumberInt.prototype.toString;
function NumberDecimal(v) {
  if (!(this instanceof NumberDecimal)) return new NumberDecimal(v);
  this.__s = v === undefined ? "0" : String(v);
}
NumberDecimal.prototype.valueOf = function () { return Number(this.__s); };
NumberDecimal.prototype.toString = function () { return 'NumberDecimal("' + this.__s + '")'; };
NumberDecimal.prototype.tojson = NumberDecimal.prototype.toString;
function BinData(subtype, base64) {
  if (!(this instanceof BinData)) return new BinData(subtype, base64);
  this.__t = subtype; this.__b = base64;
}
BinData.prototype.base64 = function () { return this.__b; };
BinData.prototype.subtype = function () { return this.__t; };
BinData.prototype.toString = function () { return 'BinData(' + this.__t + ',"' + this.__b + '")'; };
BinData.prototype.tojson = BinData.prototype.toString;
function Timestamp(t, i) {
  if (!(this instanceof Timestamp)) return new Timestamp(t, i);
  this.t = t === undefined ? 0 : t; this.i = i === undefined ? 0 : i;
}
Timestamp.prototype.toString = function () { return "Timestamp(" + this.t + ", " + this.i + ")"; };
Timestamp.prototype.tojson = Timestamp.prototype.toString;
function Code(c) { if (!(this instanceof Code)) return new Code(c); this.code = c; }
Code.prototype.toString = function () { return this.code; };
var MinKey = { toString: function () { return "{ \"$minKey\" : 1 }"; } };
var MaxKey = { toString: function () { return "{ \"$maxKey\" : 1 }"; } };
function tojson(x, indent, nolint) {
  if (x === null) return "null";
  if (x === undefined) return "undefined";
  switch (typeof x) {
    case "string": return JSON.stringify(x);
    case "number": case "boolean": return String(x);
    case "function": return x.toString();
  }
  if (x instanceof Date) return isNaN(x.getTime()) ? "ISODate(\"Invalid Date\")" : 'ISODate("' + x.toISOString() + '")';
  if (x instanceof RegExp) return x.toString();
  if (typeof x.tojson === "function" && x.tojson !== tojson) return x.tojson();
  if (x === MinKey || x === MaxKey) return x.toString();
  if (Array.isArray(x)) {
    if (x.length === 0) return "[ ]";
    return "[ " + x.map(function (v) { return tojson(v); }).join(", ") + " ]";
  }
  var keys = Object.keys(x);
  if (keys.length === 0) return "{ }";
  return "{ " + keys.map(function (k) { return JSON.stringify(k) + " : " + tojson(x[k]); }).join(", ") + " }";
}
// The Array helpers the manual's mapReduce examples call (Array.sum in the orders example).
Array.sum = function (a) { var s = 0; for (var i = 0; i < a.length; i++) s += a[i]; return s; };
Array.avg = function (a) { return a.length ? Array.sum(a) / a.length : undefined; };
Array.contains = function (a, x) { return a.indexOf(x) !== -1; };
Array.unique = function (a) {
  var out = [];
  for (var i = 0; i < a.length; i++) if (out.indexOf(a[i]) === -1) out.push(a[i]);
  return out;
};
function tojsononeline(x) { return tojson(x); }
function printjson() {}
function print() {}
function __revive(k, v) {
  if (v === null || typeof v !== "object") return v;
  var t = v["\u0000"];
  if (t === undefined) return v;
  switch (t) {
    case "D": return new Date(v.v);
    case "l": return new NumberLong(v.v);
    case "f": return Number(v.v);
    case "o": return new ObjectId(v.v);
    case "m": return new NumberDecimal(v.v);
    case "b": return new BinData(v.s, v.v);
    case "r": return new RegExp(v.v, v.f.replace(/[^gimsuy]/g, ""));
    case "t": return new Timestamp(v.v, v.i);
    case "n": return MinKey;
    case "x": return MaxKey;
    case "c": return new Code(v.v);
  }
  return v;
}
function __load(s, tagged) { return tagged ? JSON.parse(s, __revive) : JSON.parse(s); }
function __replace(k, v) {
  var o = this[k];
  if (o === undefined || o === null) return null;
  switch (typeof o) {
    case "number":
      if (o === 0 && 1 / o < 0) return { "\u0000": "f", v: "-0" };
      return isFinite(o) ? o : { "\u0000": "f", v: String(o) };
    case "string": case "boolean": return o;
    case "function": return { "\u0000": "c", v: o.toString() };
    case "bigint": return { "\u0000": "l", v: o.toString() };
  }
  if (o instanceof Date) return { "\u0000": "D", v: o.getTime() };
  if (o instanceof NumberLong) return { "\u0000": "l", v: o.__s };
  if (o instanceof NumberInt) return { "\u0000": "i", v: o.__v };
  if (o instanceof ObjectId) return { "\u0000": "o", v: o.str };
  if (o instanceof NumberDecimal) return { "\u0000": "m", v: o.__s };
  if (o instanceof BinData) return { "\u0000": "b", v: o.__b, s: o.__t };
  if (o instanceof RegExp) return { "\u0000": "r", v: o.source, f: o.flags };
  if (o instanceof Timestamp) return { "\u0000": "t", v: o.t, i: o.i };
  if (o instanceof Code) return { "\u0000": "c", v: o.code };
  if (o === MinKey) return { "\u0000": "n" };
  if (o === MaxKey) return { "\u0000": "x" };
  if (o instanceof Number || o instanceof String || o instanceof Boolean) return o.valueOf();
  return v;
}
// Arrays keep their undefined elements as null (JSON does the same).
function __dump(v) { return JSON.stringify(v, __replace); }
function __call(f, args, tagged) { return __dump(f.apply({}, __load(args, tagged))); }
function __where(f, doc, tagged) {
  var d = __load(doc, tagged);
  obj = d;
  return !!f.call(d);
}
function __map(f, docs, tagged) {
  __emits = [];
  var ds = __load(docs, tagged);
  for (var j = 0; j < ds.length; j++) { obj = ds[j]; f.call(ds[j]); }
  var out = __emits;
  __emits = [];
  return __dump(out);
}
// mapReduce's reduce or finalize over a batch of [key, values-or-value] pairs.
function __each(f, pairs, tagged) {
  var ps = __load(pairs, tagged), out = new Array(ps.length);
  for (var j = 0; j < ps.length; j++) out[j] = f.call({}, ps[j][0], ps[j][1]);
  return __dump(out);
}
function __setScope(s, tagged) {
  var o = __load(s, tagged);
  for (var k in o) globalThis[k] = o[k];
}
var obj = null;
"""

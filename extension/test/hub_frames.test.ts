/**
 * The Hub overlay's transport (hub_frames.ts): frame lines, input lines, fitting. The key
 * names come from pi at run time; here a stand-in names the few sequences used.
 */
import assert from "node:assert/strict";
import { test } from "node:test";

import { fitFrame, hubInputs, parseFrame } from "../hub_frames.ts";

const NAMES: Record<string, string> = { "\x1b[B": "down", "\r": "enter", "\x1b": "escape", q: "q", x: "x", "\x03": "ctrl+c" };
const name = (data: string) => NAMES[data];

test("a frame line is read only when it has a size and string rows", () => {
	assert.deepEqual(parseFrame('{"size":[80,2],"rows":["a","\\u001b[32mb\\u001b[0m"]}'), {
		size: [80, 2],
		rows: ["a", "\x1b[32mb\x1b[0m"],
	});
	assert.equal(parseFrame('{"size":[80],"rows":[]}'), undefined);
	assert.equal(parseFrame('{"size":[80,1],"rows":[1]}'), undefined);
	assert.equal(parseFrame("not json"), undefined);
	assert.equal(parseFrame("null"), undefined);
});

test("keys go by pi's names, unnamed typed text by character, unnamed escapes nowhere", () => {
	const paste = { buffer: undefined as string | undefined };
	assert.deepEqual(hubInputs("\x1b[B", paste, name), [{ key: "down" }]);
	assert.deepEqual(hubInputs("x", paste, name), [{ key: "x" }]);
	assert.deepEqual(hubInputs("\x03", paste, name), [{ key: "ctrl+c" }]);
	assert.deepEqual(hubInputs("é界", paste, name), [{ key: "é" }, { key: "界" }]);
	assert.deepEqual(hubInputs("\x1b[99~", paste, name), []);
});

test("a bracketed paste is one paste line, also across chunks, and keys around it stay keys", () => {
	const paste = { buffer: undefined as string | undefined };
	assert.deepEqual(hubInputs("\x1b[200~stop\ny", paste, name), []);
	assert.equal(paste.buffer, "stop\ny");
	assert.deepEqual(hubInputs(" more\x1b[201~", paste, name), [{ paste: "stop\ny more" }]);
	assert.equal(paste.buffer, undefined);
	assert.deepEqual(hubInputs("x\x1b[200~a\x1b[201~\r", paste, name), [{ key: "x" }, { paste: "a" }, { key: "enter" }]);
});

test("a frame is cut to the area: rows to its height (padded), each row to its width", () => {
	const cut = (line: string, width: number) => line.slice(0, width);
	assert.deepEqual(fitFrame(["abcdef", "gh", "ij"], 4, 2, cut), ["abcd", "gh"]);
	assert.deepEqual(fitFrame(["a"], 4, 3, cut), ["a", "", ""]);
});

/**
 * The methods the extension calls, against Slate's generated protocol schema
 * (docs/protocol.schema.json, regenerated from src/control/methods.rs).
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { METHODS } from "../protocol.ts";

const SCHEMA = new URL("../../docs/protocol.schema.json", import.meta.url);

interface Schema {
	"x-methods": Record<string, { params: { $ref?: string }; result: unknown }>;
	$defs: Record<string, { properties?: Record<string, unknown>; required?: string[] }>;
}

const schema = JSON.parse(readFileSync(SCHEMA, "utf8")) as Schema;

function paramsDef(method: string) {
	const ref = schema["x-methods"][method]?.params?.$ref ?? "";
	return schema.$defs[ref.replace("#/$defs/", "")];
}

test("every method the extension calls is in the protocol schema's x-methods", () => {
	const missing = METHODS.filter((m) => !(m in schema["x-methods"]));
	assert.deepEqual(
		missing,
		[],
		`absent from docs/protocol.schema.json x-methods: ${missing.join(", ")} ` +
			"(the Rust side adds each method the extension calls: guard and submit for workers, parentToolStart and parentToolEnd for the main session)",
	);
});

test("hello takes protocols, client and capability", () => {
	const def = paramsDef("hello");
	assert.deepEqual(Object.keys(def.properties ?? {}).sort(), ["capability", "client", "protocols"]);
});

test("delegate takes the request as an object", () => {
	const def = paramsDef("delegate");
	assert.ok(def.properties && "request" in def.properties);
	assert.deepEqual(def.required, ["request"]);
});

test("wait requires timeoutMs; message requires text", () => {
	assert.deepEqual(paramsDef("wait").required, ["timeoutMs"]);
	assert.deepEqual(paramsDef("message").required, ["text"]);
});

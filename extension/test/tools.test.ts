import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { ControlClient } from "../control.ts";
import { ACTION_METHODS, coordinateCall, registerDelegateCoordinate } from "../delegate_coordinate.ts";
import { registerDelegateTask } from "../delegate_task.ts";
import { registerSubmitResult } from "../submit_result.ts";
import { CAPABILITY, FakeCoordinator, type Handler } from "./fake_coordinator.ts";
import { FakePi } from "./fake_pi.ts";

let fake: FakeCoordinator;
let handler: Handler = () => ({ result: null });
let pi: FakePi;
let client: ControlClient;

before(async () => {
	fake = await new FakeCoordinator((r) => handler(r)).listen();
	pi = new FakePi();
	client = new ControlClient({ socket: fake.path, capability: CAPABILITY, client: "test" });
	registerSubmitResult(pi.api, client);
	registerDelegateTask(pi.api, client);
	registerDelegateCoordinate(pi.api, client);
});
after(async () => {
	client.close();
	await fake.stop();
});

function last(method: string) {
	const r = fake.received.filter((x) => x.method === method).at(-1);
	assert.ok(r, `no ${method} request`);
	return r;
}

// ---------------------------------------------------------------------------------------------
// submit_result

test("submit_result declares value unconstrained, so pi has nothing to coerce it by", () => {
	const { parameters } = pi.tool("submit_result") as { parameters: Record<string, unknown> };
	const value = (parameters.properties as Record<string, Record<string, unknown>>).value;
	assert.deepEqual(Object.keys(value), ["description"]);
	assert.deepEqual(parameters.required, ["value"]);
});

test("submit_result sends the value exactly as given and answers with Slate's message", async () => {
	handler = () => ({
		result: { status: "submitted", attempts: 1, errors: [], message: "Result accepted (attempt 1)." },
	});
	const value = { answer: "42", n: 2.5, list: [null, true, "1"] };
	const result = await pi.tool("submit_result").execute("call_1", { value }, undefined, undefined, {});
	assert.deepEqual(last("submit").params, { value });
	assert.deepEqual(result.content, [{ type: "text", text: "Result accepted (attempt 1)." }]);
	assert.equal(result.isError, false);
	assert.deepEqual(result.details, {
		status: "submitted",
		attempts: 1,
		errors: [],
		message: "Result accepted (attempt 1).",
	});
});

test("submit_result: a string stays a string, null stays null", async () => {
	handler = () => ({ result: { status: "invalid", attempts: 1, errors: ["/: expected integer"], message: "no" } });
	await pi.tool("submit_result").execute("c", { value: "42" }, undefined, undefined, {});
	assert.deepEqual(last("submit").params, { value: "42" });
	await pi.tool("submit_result").execute("c", { value: null }, undefined, undefined, {});
	assert.deepEqual(last("submit").params, { value: null });
});

test("submit_result: invalid and duplicate are error results, with Slate's text", async () => {
	for (const status of ["invalid", "duplicate"]) {
		handler = () => ({ result: { status, attempts: 2, errors: ["/a: missing"], message: `${status}!` } });
		const result = await pi.tool("submit_result").execute("c", { value: {} }, undefined, undefined, {});
		assert.equal(result.isError, true, status);
		assert.equal(result.content[0].text, `${status}!`);
	}
});

test("submit_result: a refusal is thrown with the coordinator's message", async () => {
	handler = () => ({
		error: { code: "no-result-schema", message: "submit: this generation's task has no resultSchema" },
	});
	await assert.rejects(pi.tool("submit_result").execute("c", { value: 1 }, undefined, undefined, {}), {
		message: "submit: this generation's task has no resultSchema",
	});
});

// ---------------------------------------------------------------------------------------------
// delegate_task

const SNAPSHOT_A = { id: "0b6a0000-0000-4000-8000-00000000000a", generation: 1, status: "settled" };
const SNAPSHOT_B = { id: "0b6a0000-0000-4000-8000-00000000000b", generation: 1, status: "failed" };

function outcome(snapshots: object[]) {
	return {
		result: {
			admitted: { kind: "admitted", call: 4, children: snapshots },
			outcome: { call: 4, request: 9, initiator: "x@1", delivery: "foreground", outcomes: snapshots },
			preview: "1. 0b6a…@1 settled: done",
		},
	};
}

test("delegate_task declares its fields with descriptions and no types", () => {
	const { parameters } = pi.tool("delegate_task") as { parameters: Record<string, unknown> };
	for (const [name, schema] of Object.entries(parameters.properties as Record<string, object>)) {
		assert.deepEqual(Object.keys(schema), ["description"], name);
	}
	assert.equal(parameters.required, undefined);
	assert.equal(parameters.additionalProperties, undefined, "Slate refuses extra fields itself");
});

test("delegate_task passes the request untouched; text is the preview, details the snapshot", async () => {
	handler = () => outcome([SNAPSHOT_A]);
	const request = { assignment: "Find it", profile: "scout", limits: { requests: "5" }, extra: 1 };
	const result = await pi.tool("delegate_task").execute("c", request, undefined, undefined, {});
	assert.deepEqual(last("delegate").params, { request });
	assert.deepEqual(result.content, [{ type: "text", text: "1. 0b6a…@1 settled: done" }]);
	assert.deepEqual(result.details, SNAPSHOT_A);
});

test("delegate_task: a batch's details are {children}, in order", async () => {
	handler = () => outcome([SNAPSHOT_A, SNAPSHOT_B]);
	const request = { tasks: [{ assignment: "a" }, { assignment: "b" }] };
	const result = await pi.tool("delegate_task").execute("c", request, undefined, undefined, {});
	assert.deepEqual(result.details, { children: [SNAPSHOT_A, SNAPSHOT_B] });
});

test("delegate_task runs on its own connection; aborting the tool closes it", async () => {
	handler = () => "hold";
	const abort = new AbortController();
	const call = pi.tool("delegate_task").execute("c", { assignment: "long" }, abort.signal, undefined, {});
	await fake.until(() => fake.received.at(-1)?.method === "delegate");
	const { connection } = last("delegate");
	const hellos = fake.received.filter((r) => r.connection === connection && r.method === "hello");
	assert.equal(hellos.length, 1, "a fresh connection with its own hello");
	abort.abort();
	await assert.rejects(call, { name: "AbortError" });
	await fake.until(() => fake.closed.includes(connection));
});

test("delegate_task: Slate's refusal is thrown verbatim", async () => {
	const message = "nested-capacity-unavailable: Nested capacity unavailable; no permit lending";
	handler = () => ({ error: { code: "nested-capacity-unavailable", message } });
	await assert.rejects(pi.tool("delegate_task").execute("c", { assignment: "x" }, undefined, undefined, {}), {
		message,
	});
});

// ---------------------------------------------------------------------------------------------
// delegate_coordinate

test("every contract action maps to the control method of the same name", () => {
	assert.deepEqual(Object.entries(ACTION_METHODS), [
		["message", "message"],
		["inbox", "inbox"],
		["wait", "wait"],
		["status", "status"],
		["stop", "stop"],
		["park", "park"],
		["resume", "resume"],
		["followup", "followup"],
		["revive", "revive"],
	]);
});

test("coordinateCall strips action and passes the rest as given", () => {
	const target = { id: "0b6a0000-0000-4000-8000-00000000000a", generation: "2" };
	assert.deepEqual(coordinateCall({ action: "message", target, text: "hi", mode: "steer", extra: [1] }), {
		ok: true,
		action: "message",
		method: "message",
		params: { target, text: "hi", mode: "steer", extra: [1] },
	});
	assert.deepEqual(coordinateCall({ action: "inbox" }), { ok: true, action: "inbox", method: "inbox", params: {} });
});

test("coordinateCall refuses unknown actions, inherited names and non-objects", () => {
	for (const input of [{ action: "delete" }, { action: "toString" }, { action: 3 }, {}, null, [1]]) {
		const call = coordinateCall(input);
		assert.equal(call.ok, false, JSON.stringify(input));
	}
	const call = coordinateCall({ action: "delete" });
	assert.ok(!call.ok);
	assert.equal(
		call.message,
		'delegate_coordinate: unknown action "delete"; expected one of message, inbox, wait, status, stop, park, resume, followup, revive',
	);
});

test("delegate_coordinate: message goes on the shared connection, the reply is the result", async () => {
	const reply = { kind: "message", message: { id: "m1", status: "accepted" } };
	handler = () => ({ result: reply });
	const result = await pi
		.tool("delegate_coordinate")
		.execute("c", { action: "message", text: "done", timeoutMs: "x" }, undefined, undefined, {});
	assert.deepEqual(last("message").params, { text: "done", timeoutMs: "x" });
	assert.deepEqual(result.details, reply);
	assert.deepEqual(JSON.parse(result.content[0].text), reply);
});

test("delegate_coordinate: wait gets its own connection, closed on abort", async () => {
	handler = () => "hold";
	const abort = new AbortController();
	const call = pi
		.tool("delegate_coordinate")
		.execute("c", { action: "wait", timeoutMs: 60000 }, abort.signal, undefined, {});
	await fake.until(() => fake.received.at(-1)?.method === "wait");
	const { connection, params } = last("wait");
	assert.deepEqual(params, { timeoutMs: 60000 });
	abort.abort();
	await assert.rejects(call, { name: "AbortError" });
	await fake.until(() => fake.closed.includes(connection));
});

test("delegate_coordinate: a root-only action is forwarded and Slate's refusal is the error", async () => {
	const message = "stop: root-only action; child 0b6a…@1 cannot call it";
	handler = () => ({ error: { code: "root-only", message } });
	await assert.rejects(
		pi.tool("delegate_coordinate").execute("c", { action: "stop", target: "x@1" }, undefined, undefined, {}),
		{ message },
	);
	assert.deepEqual(last("stop").params, { target: "x@1" });
});

test("delegate_coordinate: an unknown action sends nothing", async () => {
	const count = fake.received.length;
	await assert.rejects(
		pi.tool("delegate_coordinate").execute("c", { action: "spawn" }, undefined, undefined, {}),
		/unknown action "spawn"/,
	);
	assert.equal(fake.received.length, count);
});

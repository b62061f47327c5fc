import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { ControlClient } from "../control.ts";
import { registerGuards } from "../guards.ts";
import type { GuardParams } from "../protocol.ts";
import { CAPABILITY, FakeCoordinator, type Handler } from "./fake_coordinator.ts";
import { FakePi } from "./fake_pi.ts";

let fake: FakeCoordinator;
let handler: Handler = () => ({ result: { allow: true } });

before(async () => {
	fake = await new FakeCoordinator((r) => handler(r)).listen();
});
after(async () => {
	await fake.stop();
});

function setup(socket = fake.path): { pi: FakePi; client: ControlClient } {
	const pi = new FakePi();
	const client = new ControlClient({ socket, capability: CAPABILITY, client: "test" });
	registerGuards(pi.api, client);
	return { pi, client };
}

function guardsAsked(): GuardParams[] {
	return fake.received.filter((r) => r.method === "guard").map((r) => r.params as GuardParams);
}

function abortCounter(): { ctx: { abort(): void }; count: () => number } {
	let n = 0;
	return {
		ctx: {
			abort: () => {
				n++;
			},
		},
		count: () => n,
	};
}

test("an allowed model request goes ahead untouched", async () => {
	handler = () => ({ result: { allow: true } });
	const { pi, client } = setup();
	const { ctx, count } = abortCounter();
	const answer = await pi.emit("before_provider_request", { payload: { model: "m" } }, ctx);
	assert.equal(answer, undefined, "no replacement payload");
	assert.equal(count(), 0);
	assert.deepEqual(guardsAsked().at(-1), { kind: "request" });
	client.close();
});

test("a denied model request aborts the turn (pi then sends nothing)", async () => {
	handler = () => ({ result: { allow: false, reason: "out of budget: request limit of 3 reached" } });
	const { pi, client } = setup();
	const { ctx, count } = abortCounter();
	await pi.emit("before_provider_request", { payload: {} }, ctx);
	assert.equal(count(), 1);
	client.close();
});

test("an unreachable coordinator denies every model request (fail closed)", async () => {
	const { pi, client } = setup(`${fake.path}.gone`);
	const { ctx, count } = abortCounter();
	await pi.emit("before_provider_request", { payload: {} }, ctx);
	assert.equal(count(), 1);
	client.close();
});

test("a tool call is guarded by name and call id; a denial blocks it with Slate's reason", async () => {
	handler = (r) =>
		(r.params as { tool?: string }).tool === "bash"
			? { result: { allow: false, reason: "out of budget: tool limit of 2 reached" } }
			: { result: { allow: true } };
	const { pi, client } = setup();
	const blocked = await pi.emit("tool_call", {
		type: "tool_call",
		toolName: "bash",
		toolCallId: "call_7",
		input: { command: "touch x" },
	});
	assert.deepEqual(blocked, { block: true, reason: "out of budget: tool limit of 2 reached" });
	assert.deepEqual(guardsAsked().at(-1), { kind: "tool", tool: "bash", callId: "call_7" });
	const allowed = await pi.emit("tool_call", {
		type: "tool_call",
		toolName: "submit_result",
		toolCallId: "call_8",
		input: { value: 1 },
	});
	assert.equal(allowed, undefined);
	client.close();
});

test("an unreachable coordinator blocks tools with a reason that says so", async () => {
	const { pi, client } = setup(`${fake.path}.gone`);
	const answer = (await pi.emit("tool_call", {
		type: "tool_call",
		toolName: "read",
		toolCallId: "c",
		input: {},
	})) as { block: boolean; reason: string };
	assert.equal(answer.block, true);
	assert.match(answer.reason, /^denied: Slate could not be asked \(cannot reach the Slate coordinator/);
	client.close();
});

test("an unreadable guard answer denies", async () => {
	handler = () => ({ result: { allow: "yes" } });
	const { pi, client } = setup();
	const answer = (await pi.emit("tool_call", { toolName: "read", toolCallId: "c", input: {} })) as {
		block: boolean;
		reason: string;
	};
	assert.equal(answer.block, true);
	assert.match(answer.reason, /unreadable/);
	client.close();
});

test("compaction is guarded as kind compaction; a denial cancels it", async () => {
	handler = () => ({ result: { allow: false, reason: "out of budget: request limit of 1 reached" } });
	const { pi, client } = setup();
	assert.deepEqual(await pi.emit("session_before_compact", { reason: "threshold" }), { cancel: true });
	assert.deepEqual(guardsAsked().at(-1), { kind: "compaction" });
	handler = () => ({ result: { allow: true } });
	assert.equal(await pi.emit("session_before_compact", { reason: "threshold" }), undefined);
	client.close();
});

test("a branch summary is guarded; tree navigation without one asks nothing", async () => {
	handler = () => ({ result: { allow: false, reason: "out of budget: stopping" } });
	const { pi, client } = setup();
	const asked = guardsAsked().length;
	assert.equal(
		await pi.emit("session_before_tree", { preparation: { userWantsSummary: false } }),
		undefined,
	);
	assert.equal(guardsAsked().length, asked, "no request, no guard");
	assert.deepEqual(
		await pi.emit("session_before_tree", { preparation: { userWantsSummary: true } }),
		{ cancel: true },
	);
	assert.deepEqual(guardsAsked().at(-1), { kind: "compaction" });
	client.close();
});

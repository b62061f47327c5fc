import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import {
	type Endpoint,
	ControlClient,
	ControlError,
	REQUEST_LINE_MAX,
	UnreachableError,
} from "../control.ts";
import { CAPABILITY, FakeCoordinator, type Handler, type Received } from "./fake_coordinator.ts";

function endpoint(socket: string, capability = CAPABILITY): Endpoint {
	return { socket, capability, client: "slate-pi-extension test" };
}

let fake: FakeCoordinator;
let handler: Handler = () => ({ result: { allow: true } });

before(async () => {
	fake = await new FakeCoordinator((r) => handler(r)).listen();
});
after(async () => {
	await fake.stop();
});

test("hello presents the capability, protocol 2 and the client name, once per connection", async () => {
	handler = () => ({ result: { allow: true } });
	const client = new ControlClient(endpoint(fake.path));
	const before = fake.connectionCount;
	await client.call("guard", { kind: "request" });
	await client.call("guard", { kind: "compaction" });
	client.close();
	assert.equal(fake.connectionCount, before + 1, "one persistent connection for both calls");
	const hello = fake.received.filter((r) => r.method === "hello").at(-1);
	assert.deepEqual(hello?.params, {
		protocols: [2],
		client: "slate-pi-extension test",
		capability: CAPABILITY,
	});
});

test("answers are matched by id, not by order", async () => {
	const held: Received[] = [];
	handler = (r) => {
		held.push(r);
		return "hold";
	};
	const client = new ControlClient(endpoint(fake.path));
	const first = client.call("guard", { kind: "tool", tool: "a", callId: "1" });
	const second = client.call("guard", { kind: "tool", tool: "b", callId: "2" });
	await fake.until(() => held.length === 2);
	// Answer the second first, by hand, on the same socket.
	const [a, b] = held;
	const answers = new Map([
		[b.id, { allow: false, reason: "second" }],
		[a.id, { allow: true }],
	]);
	for (const [id, result] of answers) {
		fake.answer(b.connection, id, { result });
	}
	assert.deepEqual(await second, { allow: false, reason: "second" });
	assert.deepEqual(await first, { allow: true });
	client.close();
});

test("an error answer is a ControlError with the coordinator's code, message (verbatim) and data", async () => {
	const message = "stop: root-only action; child 0b6a…@1 cannot call it";
	handler = () => ({ error: { code: "root-only", message, data: { method: "stop" } } });
	const client = new ControlClient(endpoint(fake.path));
	await assert.rejects(client.call("callTool", { tool: "delegate_coordinate", input: { action: "stop", target: "x@1" } }), (error: unknown) => {
		assert.ok(error instanceof ControlError);
		assert.equal(error.code, "root-only");
		assert.equal(error.message, message);
		assert.deepEqual(error.data, { method: "stop" });
		return true;
	});
	client.close();
});

test("an error with id null answers every call waiting at that moment", async () => {
	const held: Received[] = [];
	handler = (r) => {
		held.push(r);
		return "hold";
	};
	const client = new ControlClient(endpoint(fake.path));
	const calls = [
		client.call("guard", { kind: "request" }),
		client.call("submit", { value: 1 }),
	];
	await fake.until(() => held.length === 2);
	fake.answer(held[0].connection, null, { error: { code: "parse-error", message: "line 3: not JSON" } });
	for (const call of calls) {
		await assert.rejects(call, { name: "ControlError", message: "line 3: not JSON" });
	}
	client.close();
});

test("a refused hello fails the call with the coordinator's message, and the next call reconnects", async () => {
	handler = () => ({ result: { allow: true } });
	const client = new ControlClient(endpoint(fake.path, "f".repeat(64)));
	await assert.rejects(client.call("guard", { kind: "request" }), {
		name: "ControlError",
		message: "hello.capability: not the capability of a live worker generation of this coordinator",
	});
	const before = fake.connectionCount;
	await assert.rejects(client.call("guard", { kind: "request" }), { name: "ControlError" });
	assert.equal(fake.connectionCount, before + 1, "a failed hello is not reused");
	client.close();
});

test("an unreachable socket is an UnreachableError naming the path", async () => {
	const path = `${fake.path}.missing`;
	const client = new ControlClient(endpoint(path));
	await assert.rejects(client.call("guard", { kind: "request" }), (error: unknown) => {
		assert.ok(error instanceof UnreachableError);
		assert.match(error.message, /cannot reach the Slate coordinator/);
		assert.ok(error.message.includes(path));
		return true;
	});
	client.close();
});

test("a connection lost mid-call fails the call, and the next call opens a new one", async () => {
	let drop = true;
	handler = (r) => {
		if (drop) {
			drop = false;
			fake.drop(r.connection);
			return "hold";
		}
		return { result: { allow: true } };
	};
	const client = new ControlClient(endpoint(fake.path));
	await assert.rejects(client.call("guard", { kind: "request" }), { name: "UnreachableError" });
	assert.deepEqual(await client.call("guard", { kind: "request" }), { allow: true });
	client.close();
});

test("a call with no answer times out (short calls are bounded)", async () => {
	handler = () => "hold";
	const client = new ControlClient(endpoint(fake.path), 50);
	await assert.rejects(client.call("guard", { kind: "request" }), {
		name: "UnreachableError",
		message: "guard: no answer from the Slate coordinator within 50 ms",
	});
	client.close();
});

test("a request line over 1 MiB is refused before anything is sent", async () => {
	handler = () => ({ result: { status: "submitted", attempts: 1, errors: [], message: "ok" } });
	const client = new ControlClient(endpoint(fake.path));
	await client.call("guard", { kind: "request" }); // connected
	const count = fake.received.length;
	await assert.rejects(client.call("submit", { value: "x".repeat(REQUEST_LINE_MAX) }), (error: unknown) => {
		assert.ok(error instanceof ControlError);
		assert.equal(error.code, "line-too-long");
		assert.equal((error.data as { max: number }).max, REQUEST_LINE_MAX);
		return true;
	});
	assert.equal(fake.received.length, count, "nothing reached the socket");
	client.close();
});

test("callOnce uses its own connection and closes it after the answer", async () => {
	handler = () => ({ result: { kind: "inbox", messages: [] } });
	const client = new ControlClient(endpoint(fake.path));
	const before = fake.connectionCount;
	assert.deepEqual(await client.callOnce("tools", {}), { kind: "inbox", messages: [] });
	assert.equal(fake.connectionCount, before + 1);
	await fake.until(() => fake.closed.includes(before + 1));
	client.close();
});

test("aborting a long call destroys its socket at once and rejects with AbortError", async () => {
	handler = () => "hold";
	const client = new ControlClient(endpoint(fake.path));
	const abort = new AbortController();
	const call = client.callOnce("callTool", { tool: "delegate_task", input: { assignment: "x" } }, abort.signal);
	await fake.until(() => fake.received.at(-1)?.method === "callTool");
	const connection = fake.received.at(-1)?.connection ?? -1;
	assert.ok(!fake.closed.includes(connection));
	abort.abort();
	await assert.rejects(call, { name: "AbortError", message: "callTool: cancelled (the tool call was aborted)" });
	await fake.until(() => fake.closed.includes(connection));
	client.close();
});

test("an already aborted signal sends nothing", async () => {
	const client = new ControlClient(endpoint(fake.path));
	const before = fake.connectionCount;
	await assert.rejects(client.callOnce("tools", {}, AbortSignal.abort()), { name: "AbortError" });
	assert.equal(fake.connectionCount, before);
});

test("guard round trip on the persistent connection: median at most 1 ms", async () => {
	handler = () => ({ result: { allow: true } });
	const client = new ControlClient(endpoint(fake.path));
	for (let i = 0; i < 50; i++) {
		await client.call("guard", { kind: "request" }); // warm up (connect, JIT)
	}
	const samples: number[] = [];
	for (let i = 0; i < 1000; i++) {
		const start = process.hrtime.bigint();
		await client.call("guard", { kind: "tool", tool: "bash", callId: `call_${i}` });
		samples.push(Number(process.hrtime.bigint() - start) / 1e6);
	}
	client.close();
	samples.sort((x, y) => x - y);
	const median = samples[samples.length >> 1];
	const p99 = samples[Math.floor(samples.length * 0.99)];
	process.stderr.write(`guard round trip (in-process server): median ${median.toFixed(3)} ms, p99 ${p99.toFixed(3)} ms\n`);
	assert.ok(median <= 1, `median ${median} ms`);
});

/**
 * The control-protocol 2 methods this extension calls, typed by hand.
 *
 * Written against Slate's `docs/protocol.schema.json` (`x-methods`, `$defs`): the worker's
 * `guard` and `submit`, the main session's `parentToolStart`/`parentToolEnd`, `subscribe` and
 * `shutdown` (`docs/protocol.md`). One entry of {@link Methods} per method
 * ties its name to its params and result, so `ControlClient.call` cannot send the wrong shape
 * or misread the answer. Values that Slate validates itself (a `delegate` request, a submitted
 * value, the params of a `delegate_coordinate` action) stay `unknown` here: the extension passes
 * them through as the model wrote them and never reshapes them.
 */

import type { GenMethods, GenNotification } from "./protocol.gen.ts";

/** The protocol version the extension speaks. */
export const PROTOCOL_VERSION = 2;

/** `{code, message, data?}`: `code` names the rule, `message` is for people. */
export interface WireError {
	code: string;
	message: string;
	data?: unknown;
}

/** `"UUID@generation"`, or the contract's `{id, generation}` (Slate checks either strictly). */
export type Target = string | { id: string; generation: number };

export interface HelloParams {
	protocols: number[];
	/**
	 * `"name version"`, or `{name, extension}` from the main session, where `extension` is the
	 * installed extension's content hash: a different one than the binary's is refused.
	 */
	client?: string | { name: string; extension: string };
	capability?: string;
}

export type CallerView = { kind: "operator" } | { kind: "child"; target: string };

export interface HelloResult {
	protocol: number;
	server: string;
	parentId: string;
	cwd: string;
	pid: number;
	actor: CallerView;
}

/** Asked before a model request, a compaction or branch summary, or a tool execution. */
export type GuardParams =
	| { kind: "request" }
	| { kind: "compaction" }
	| { kind: "tool"; tool: string; callId: string };

export type GuardResult = GenMethods["guard"]["result"];

/** `value` is any JSON value, exactly as the model wrote it. */
export interface SubmitParams {
	value: unknown;
}

export interface SubmitResult {
	status: "submitted" | "invalid" | "duplicate";
	attempts: number;
	/** `"<JSON Pointer>: <message>"`, at most 32. */
	errors: string[];
	/** The model-facing text. */
	message: string;
}

/** A server → client line without an id: `event`/`lagged` (subscribed connections), and a
 * `callTool`'s `toolUpdate`/`toolOutcome` (on the connection that made the call). */
export type Notification = GenNotification;

export type { ToolAnswer, ToolOutcome, ToolRow, ToolSpec, ToolUpdate } from "./protocol.gen.ts";

/** One extension load unit the host session loaded, from pi's tool provenance. */
export interface HostUnit {
	source: string;
	path: string;
	tools: { name: string; path: string }[];
}

export interface HostExtensionsParams {
	units: HostUnit[];
}

/** What every worker loads too (`workerExtensions`), what is withheld and why, the doctrine. */
export type HostExtensionsResult = GenMethods["hostExtensions"]["result"];

/** `parentToolStart`: the main session's tool call `callId` of `tool` is about to run. */
export type ParentToolStartParams = GenMethods["parentToolStart"]["params"];

/**
 * Every method the extension calls: name → params and result. The tool layer's methods are
 * taken from the declarations generated from Slate's schema (`protocol.gen.ts`), so a shape the
 * extension reads differently from what Slate writes fails `tsc`.
 */
export interface Methods {
	hello: { params: HelloParams; result: HelloResult };
	guard: { params: GuardParams; result: GuardResult };
	submit: { params: SubmitParams; result: SubmitResult };
	subscribe: { params: Record<string, never>; result: { subscribed: boolean } };
	shutdown: { params: Record<string, never>; result: { shuttingDown: boolean } };
	parentToolStart: { params: ParentToolStartParams; result: { reserved: boolean } };
	parentToolEnd: { params: { callId: string }; result: { released: boolean } };
	hostExtensions: { params: HostExtensionsParams; result: HostExtensionsResult };
	targets: GenMethods["targets"];
	outcomeDelivered: GenMethods["outcomeDelivered"];
	routingFacts: GenMethods["routingFacts"];
	tools: GenMethods["tools"];
	callTool: GenMethods["callTool"];
}

/** `targets`: one current generation, for completion (`handle` is for reading only). */
export type { TargetRow } from "./protocol.gen.ts";

/** `routingFacts`: one model of pi's registry, as pi reports it to Slate. */
export type { HostModel } from "./protocol.gen.ts";

/**
 * Each hand-written entry must agree with Slate's schema (a mismatch fails `tsc`): what Slate
 * answers must be readable as the result type the extension reads, and what the extension sends
 * must be params Slate accepts.
 */
type Agrees<M extends keyof Methods & keyof GenMethods> = [GenMethods[M]["result"]] extends [Methods[M]["result"]]
	? [Methods[M]["params"]] extends [GenMethods[M]["params"]]
		? true
		: false
	: false;
const agreed: {
	[M in "guard" | "submit" | "subscribe" | "shutdown" | "parentToolStart" | "parentToolEnd" | "hello" | "hostExtensions"]: Agrees<M>;
} = {
	guard: true,
	submit: true,
	subscribe: true,
	shutdown: true,
	parentToolStart: true,
	parentToolEnd: true,
	hello: true,
	hostExtensions: true,
};
void agreed;

export type Method = keyof Methods;
export type Params<M extends Method> = Methods[M]["params"];
export type Result<M extends Method> = Methods[M]["result"];

/** The names of {@link Methods}, for the test that checks them against the schema. */
export const METHODS = [
	"hello",
	"guard",
	"submit",
	"subscribe",
	"shutdown",
	"parentToolStart",
	"parentToolEnd",
	"hostExtensions",
	"targets",
	"outcomeDelivered",
	"routingFacts",
	"tools",
	"callTool",
] as const satisfies readonly Method[];

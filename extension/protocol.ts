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

export type GuardResult = { allow: true } | { allow: false; reason: string };

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

/** A registry snapshot (`ChildSnapshot`); the extension reads none of its fields. */
export type ChildSnapshot = { id: string; generation: number } & Record<string, unknown>;

export interface WindowOutcome {
	call: number;
	request: number;
	initiator: string;
	delivery: unknown;
	/** Ordered as admitted. */
	outcomes: ChildSnapshot[];
}

/** `Reply`, tagged by `kind` (only the kinds a worker's methods answer are spelled out). */
export type Reply =
	| { kind: "admitted"; call: number; children: ChildSnapshot[] }
	| { kind: "message"; message: Record<string, unknown> }
	| { kind: "inbox"; messages: Record<string, unknown>[] }
	| { kind: "wait"; result: { kind: string } & Record<string, unknown> }
	| ({ kind: "snapshot" | "stopped" | "status" | "ok" } & Record<string, unknown>);

/** `parentToolStart`: the main session's tool call `callId` of `tool` is about to run. */
export interface ParentToolStartParams {
	callId: string;
	tool: string;
}

/** The outcome event of a background (or silent) window, with its model-facing preview. */
export interface OutcomeEvent {
	kind: "outcome";
	outcome: WindowOutcome;
	preview: string;
}

/** `event` notifications, tagged by `kind` (the extension reads only `outcome`). */
export type Event =
	| OutcomeEvent
	| { kind: "registry"; event: unknown }
	| { kind: "lagged"; missed: number }
	| { kind: "shutdownComplete" };

/** A server → client line without an id (`subscribe`d connections only). */
export type Notification =
	| { method: "event"; params: Event }
	| { method: "lagged"; params: { missed: number } };

/** A foreground `delegate`: the admission, the drained window and its model-facing preview. */
export interface DelegateOutcome {
	admitted: Reply;
	outcome: WindowOutcome;
	preview: string;
}

export interface DelegateParams {
	/** The native `delegate_task` input, untouched. */
	request: unknown;
}

/** The params of a `delegate_coordinate` action other than `action`, untouched. */
export type PassThrough = Record<string, unknown>;

/** Every method the extension calls: name → params and result. */
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
export interface HostExtensionsResult {
	selected: { source: string; path: string; tools: string[] }[];
	withheld: { source: string; path: string; reason: string }[];
	doctrine: string | null;
}

export interface Methods {
	hello: { params: HelloParams; result: HelloResult };
	guard: { params: GuardParams; result: GuardResult };
	submit: { params: SubmitParams; result: SubmitResult };
	delegate: { params: DelegateParams; result: Reply | DelegateOutcome };
	message: { params: PassThrough; result: Reply };
	inbox: { params: PassThrough; result: Reply };
	wait: { params: PassThrough; result: Reply };
	// Root-only: a worker's connection is refused with the contract's wording. They are named so
	// that `delegate_coordinate` forwards the model's call and the model reads Slate's refusal.
	status: { params: PassThrough; result: unknown };
	stop: { params: PassThrough; result: unknown };
	park: { params: PassThrough; result: unknown };
	resume: { params: PassThrough; result: unknown };
	followup: { params: PassThrough; result: unknown };
	revive: { params: PassThrough; result: unknown };
	// The operator's (the main session's) own.
	steer: { params: PassThrough; result: unknown };
	agents: { params: Record<string, never>; result: unknown };
	subscribe: { params: Record<string, never>; result: { subscribed: boolean } };
	shutdown: { params: Record<string, never>; result: { shuttingDown: boolean } };
	parentToolStart: { params: ParentToolStartParams; result: { reserved: boolean } };
	parentToolEnd: { params: { callId: string }; result: { released: boolean } };
	hostExtensions: { params: HostExtensionsParams; result: HostExtensionsResult };
	targets: { params: Record<string, never>; result: TargetsResult };
	outcomeDelivered: { params: { call: number }; result: { generations: number } };
}

/** `targets`: one current generation, for completion (`handle` is for reading only). */
export interface TargetRow {
	target: string;
	handle: string;
	role: string;
	status: string;
	headline: string;
}

export interface TargetsResult {
	targets: TargetRow[];
}

export type Method = keyof Methods;
export type Params<M extends Method> = Methods[M]["params"];
export type Result<M extends Method> = Methods[M]["result"];

/** The names of {@link Methods}, for the test that checks them against the schema. */
export const METHODS = [
	"hello",
	"guard",
	"submit",
	"delegate",
	"message",
	"inbox",
	"wait",
	"status",
	"stop",
	"park",
	"resume",
	"followup",
	"revive",
	"steer",
	"agents",
	"subscribe",
	"shutdown",
	"parentToolStart",
	"parentToolEnd",
	"hostExtensions",
	"targets",
	"outcomeDelivered",
] as const satisfies readonly Method[];

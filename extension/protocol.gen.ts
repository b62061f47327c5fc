// Generated from docs/protocol.schema.json (src/control/typescript.rs) by
// `SLATE_BLESS=1 cargo test --test protocol`; a test keeps it current. Do not edit.
/* eslint-disable */

/** Current presence of one identity (its current generation). */
export type AgentPresence = {
	generation: number;
	id: string;
	presence: Presence;
};

/** References to fully written artifacts only. */
export type Artifacts = {
	error?: (string) | (null);
	structured?: (string) | (null);
	text?: (string) | (null);
};

/** pi's seven builtin tools, in role order. */
export type BuiltinTool = ("read") | ("grep") | ("find") | ("ls") | ("write") | ("edit") | ("bash");

/** One admission (or resume/renewal) call: the unit that receives one window outcome. */
export type CallId = number;

/** `callTool`: one tool call of the caller. */
export type CallToolParams = {
	/** The host's id of this call (pi's `toolCallId`), echoed in its notifications. */
	callId?: (string) | (null);
	/** A root's foreground delegation is cancelled when this connection closes before its
	 * outcome (`delegate`'s `cancelOnClose`); a child's always is. */
	cancelOnClose?: boolean;
	/** The tool's input exactly as the model wrote it. */
	input: unknown;
	/** One of the caller's tools (`tools`). */
	tool: string;
};

/** `hello`'s `actor`: `{"kind": "operator"}` or `{"kind": "child", "target": "UUID@G"}`. */
export type CallerView = (({
	kind: "operator";
}) | ({
	kind: "child";
	target: string;
}));

/** A tool the policy declined to forward, with the reason. */
export type CapabilityDenial = {
	name: string;
	reason: string;
};

/** A detached, immutable view of one generation. */
export type ChildSnapshot = {
	activity?: (string) | (null);
	artifacts?: ((Artifacts) | (null));
	assignment: string;
	capabilityDenials: Array<CapabilityDenial>;
	createdAt: number;
	cwd: string;
	/** When the outcome of this generation's latest window reached its parent: the waiting
	 * caller of a foreground call was answered, or the parent session acknowledged a
	 * background outcome (`outcomeDelivered`). Absent until then, and again once a new
	 * window opens (`resume`). A followup's or revive's window is delivered by the same rule:
	 * its outcome goes to the call that started it (a tool call's session acknowledges it). */
	deliveredAt?: (number) | (null);
	depth: number;
	disposed: boolean;
	effort?: (string) | (null);
	endedAt?: (number) | (null);
	error?: (string) | (null);
	generation: number;
	id: string;
	leafTools: Array<string>;
	limitReason?: ((LimitReason) | (null));
	limits: Limits;
	/** The logical action, when the task named a logical model. */
	logical?: ((LogicalSnapshot) | (null));
	/** The latest accepted route, `provider/id` (recovery can change it). */
	model?: (string) | (null);
	outcome?: ((StructuredOutcome) | (null));
	parentGeneration?: (number) | (null);
	/** The real parent: the root runtime's id for depth 1, the parent identity otherwise. */
	parentId: string;
	pauseReason?: ((PauseReason) | (null));
	prewalk?: ((Prewalk) | (null));
	profile: Role;
	/** At most 4096 characters: a worker's progress note, or (see `streaming`) the newest
	 * streamed output. */
	progress?: (string) | (null);
	requestedEffort?: (string) | (null);
	/** The initial physical pair, before any failover. */
	requestedModel?: (string) | (null);
	/** Final assistant text (trimmed), once the prompt resolved. */
	result?: (string) | (null);
	/** True while a paused generation keeps its conversation for `resume`. */
	retainedContext: boolean;
	/** A retry in progress, as the worker reported it. */
	retry?: ((Retry) | (null));
	skills: Array<string>;
	/** Cumulative admitted direct children of this generation. */
	spawns: number;
	status: Status;
	/** Set while `progress` is streamed output that is still growing; absent otherwise. */
	streaming?: ((Streaming) | (null));
	telemetry: Telemetry;
	/** Cumulative executable tool invocations of this generation. */
	toolCalls: number;
	tools: Array<BuiltinTool>;
	transcript?: (string) | (null);
	window: Window;
	writerLease: boolean;
};

/** Who the client is: "name version", or {"name", "extension"?} where extension is the content hash of Slate's installed pi extension (install.json); a hash other than the running binary's refuses hello with extension-mismatch. */
export type ClientInfo = ((string) | ({
	extension?: (string) | (null);
	name: string;
}));

/** Context-window usage reported by the worker (never synthesized). */
export type ContextUsage = {
	contextWindow: number;
	percent?: (number) | (null);
	tokens?: (number) | (null);
};

/** An error as it travels on the wire: a stable `code` naming the rule, a message that names
 * the offending field or identity, and optional structured `data`. */
export type ControlError = {
	/** Stable; names the rule (`invalid-request`, `stale-generation`, …). */
	code: string;
	/** Structured detail, documented per code. */
	data?: unknown;
	/** For people; names the offending field or identity. */
	message: string;
};

/** A foreground `delegate`: the admission, then the drained window. */
export type DelegateOutcome = {
	admitted: Reply;
	outcome: WindowOutcome;
	/** The model-facing preview of `outcome.outcomes`, in order ([Full output artifacts and
	 * previews]): a references header, then each field clipped to 2048 characters with a
	 * label, within 50 KB / 2000 lines (`policy::preview::preview`). */
	preview: string;
};

/** `delegate`. */
export type DelegateParams = {
	/** Overrides the request's own `background`. */
	background?: (boolean) | (null);
	/** A root's foreground call only: when the caller stops waiting (its connection closes
	 * before the outcome), the call is cancelled — its unsettled members are marked and
	 * drain, settled ones keep their outcome ([Registry, controls and final delivery]:
	 * "caller foreground cancellation"). Without it the root's window goes on, owned by the
	 * coordinator. `slate mcp` sets it: the MCP host's `notifications/cancelled` is the
	 * caller's cancellation. A child's foreground call is always cancelled so; a background
	 * call has nothing to abandon. */
	cancelOnClose?: boolean;
	/** The contract's native `delegate_task` input or a compatibility `subagent` launch. Its
	 * shape is the user's and is validated by policy (problems name JSON paths like
	 * `$.tasks[0].limits.requests`), not by this schema. */
	request: Record<string, unknown>;
};

/** `delegate`: background answers at admission, foreground once the window drains. */
export type DelegateResult = ((Reply) | (DelegateOutcome));

/** How a call's window outcome is delivered. */
export type Delivery = (("foreground") | ("background") | ("silent"));

/** What a subscribed connection receives as `event` notifications. */
export type Event = (({
	event: RegistryEvent;
	kind: "registry";
}) | ({
	kind: "outcome";
	outcome: WindowOutcome;
	preview: string;
}) | ({
	kind: "lagged";
	missed: number;
}) | ({
	kind: "shutdownComplete";
}));

/** The coordinator's counters. */
export type FleetStats = {
	activePermits: number;
	admittedMessages: number;
	liveWorkers: number;
	openWindows: number;
	pendingWaiters: number;
	queued: number;
	rootInbox: number;
	/** The generation holding the writer lease, `"UUID@generation"`. */
	writer?: ((Target) | (null));
};

/** `status` without a target: every current generation in admission order. */
export type FleetStatus = {
	agents: Array<AgentPresence>;
	children: Array<ChildSnapshot>;
	parentId: string;
	policy: SchedulingPolicy;
	stats: FleetStats;
};

/** `status {summary: true}`. */
export type FleetSummary = {
	children: Array<SummaryRow>;
	parentId: string;
	policy: SchedulingPolicy;
	/** The coordinator's counters, as in the full status answer. */
	stats: FleetStats;
};

/** `status {table: true}`: the current generations in admission order. */
export type FleetTable = {
	parentId: string;
	rows: Array<TableRow>;
};

/** `status {text: true}`: the fleet table exactly as `slate status` and `subagent-status`
 * print it (header line, rows in tree order, each line ending in a newline).
 * 
 * The coordinator writes it with the same [`write_fleet_table`] the command would run on
 * table rows, and keeps it while nothing changes (a table whose every row has ended has no
 * clock in it). The command then only copies it to stdout: reading 1,000 compact rows and
 * writing their lines was most of a poll's own work. */
export type FleetText = {
	parentId: string;
	/** The lines, already sanitized for a terminal (untrusted text went through
	 * [`crate::text::SafeText`] as it was fitted to its column). */
	text: string;
};

/** `guard` (child-only): asked by the worker's extension before a model request, a
 * compaction or a tool execution; the coordinator counts it or refuses it. */
export type GuardParams = (({
	kind: "request";
}) | ({
	kind: "compaction";
}) | ({
	/** pi's `toolCallId`. */
	callId: string;
	kind: "tool";
	/** The tool's name. */
	tool: string;
}));

/** `guard`: whether the worker may go ahead. */
export type GuardResult = {
	allow: boolean;
	/** Why not (model- and user-facing; starts with `out of budget:`). Only when denied. */
	reason?: (string) | (null);
};

/** `hello`: the versions the client speaks; the server picks one or refuses with its list. */
export type HelloParams = {
	/** A worker generation's secret capability: the connection then speaks as that
	 * generation (see `control::caller`). Redacted in `Debug`. */
	capability?: (string) | (null);
	/** Who the client is: its name and version, e.g. `"slate 0.1.0"` (first 200 characters
	 * kept), alone or with the content hash of the Slate pi extension it runs. */
	client?: ((ClientInfo) | (null));
	/** Protocol versions the client speaks (at least one). */
	protocols: Array<number>;
};

/** `hello`: who answers, and the version now in use. */
export type HelloResult = {
	/** Who this connection speaks for. */
	actor: CallerView;
	cwd: string;
	parentId: string;
	pid: number;
	protocol: number;
	/** `"slate <version>"`. */
	server: string;
};

/** `hostExtensions`: the extension load units the host pi session has loaded (Slate's
 * extension in the main session reports them once, from pi's tool provenance). */
export type HostExtensionsParams = {
	units: Array<HostUnit>;
};

/** What every worker of this session loads besides Slate's own extension, what a
 * `workerExtensions` pattern matched but is withheld (with the reason), and the doctrine line
 * for the main session's system prompt (`null` when nothing is selected). */
export type HostExtensionsResult = {
	doctrine?: (string) | (null);
	selected: Array<WorkerExtension>;
	withheld: Array<Withheld>;
};

/** One model in the host pi's registry, as pi reports it: `provider/id`, and whether pi has
 * credentials for it (`ModelRegistry.hasConfiguredAuth`). */
export type HostModel = {
	credentials: boolean;
	id: string;
	provider: string;
};

/** One tool a host unit registered. */
export type HostTool = {
	name: string;
	/** The tool's entry path (pi's `sourceInfo.path`). */
	path: string;
};

/** One extension load unit the host session has loaded, as pi records it. */
export type HostUnit = {
	/** The load unit's path: the file pi loaded. */
	path: string;
	/** The recorded source spec (`npm:pi-web-search@1.3.1`, `local`, `builtin`, …). */
	source: string;
	/** The tools the unit registered. */
	tools: Array<HostTool>;
};

/** `lagged` notification: this connection fell behind and `missed` events were dropped. */
export type Lagged = {
	missed: number;
};

/** How a pi worker's process started (issue 23). */
export type Launch = (("pooled") | ("cold"));

/** The hard limit that cancelled a generation (the first one committed is kept). */
export type LimitReason = ("requests") | ("tools");

/** Execution limits of one generation (all finite; there is no unlimited sentinel). */
export type Limits = {
	deadlineMs: number;
	depth: number;
	requests: number;
	spawns: number;
	tools: number;
};

/** The logical action of a generation: what was asked for and which logical model the latest
 * accepted route serves. */
export type LogicalSnapshot = {
	/** Admission order in the session (preference freshness). */
	admission: number;
	/** The logical model the task named. */
	model: string;
	reason: string;
	/** The logical model of the latest accepted route (differs from `model` after recovery
	 * moved to another logical model). */
	routeModel: string;
	/** The provider of the latest accepted route (what a success publishes). */
	routeProvider: string;
	/** Route switches made by recovery so far. */
	switches: number;
};

/** A message and its receipt: `{id,sender,recipient,text,mode,status,error?}`. */
export type Message = {
	error?: (string) | (null);
	id: MessageId;
	mode: MessageMode;
	recipient: Party;
	sender: Party;
	status: ReceiptStatus;
	text: string;
};

/** A message receipt id (a UUID from the same id source as identities). */
export type MessageId = string;

export type MessageMode = ("inbox") | ("steer") | ("followUp");

/** `message`: root → a direct child (or the root inbox without a target). */
export type MessageParams = {
	mode?: MessageMode;
	target?: ((Target) | (null));
	/** Non-blank text. */
	text: string;
};

/** A message receipt id (36-character hyphenated UUID). */
export type MessageRef = string;

/** Methods without params: `{}` (or absent / `null`). */
export type NoParams = Record<string, never>;

/** A server → client message without an id. */
export type Notification = (({
	method: "event";
	params: Event;
}) | ({
	method: "lagged";
	params: Lagged;
}) | ({
	method: "toolUpdate";
	params: ToolUpdate;
}) | ({
	method: "toolOutcome";
	params: ToolOutcome;
}));

/** `outcomeDelivered`: the outcome of window `call` (an `outcome` event's `outcome.call`)
 * reached the caller, who started it. */
export type OutcomeDeliveredParams = {
	call: CallId;
};

/** How many generations were marked delivered now (0 for another party's call, a call
 * marked before, or one that is unknown). */
export type OutcomeDeliveredResult = {
	generations: number;
};

/** `parentToolEnd` (operator-only): the call finalized (ran, failed or was blocked). */
export type ParentToolEndParams = {
	callId: string;
};

/** `parentToolEnd`: whether a reservation of that call id was released (`false` for an id
 * that held none). */
export type ParentToolEndResult = {
	released: boolean;
};

/** `parentToolStart` (operator-only): the main session's model is about to run a tool. */
export type ParentToolStartParams = {
	/** pi's `toolCallId` (1 to 1024 bytes, not blank, no control character); released by
	 * `parentToolEnd`. */
	callId: string;
	/** The tool's name (1 to 256 bytes, no control character). The coordinator decides
	 * whether it mutates (`policy::parent_tools`). */
	tool: string;
};

/** `parentToolStart`: whether the call now holds a parent mutation reservation (`false` for
 * the exempt read-only and delegation tools). */
export type ParentToolStartResult = {
	reserved: boolean;
};

/** "root" or "UUID@generation" */
export type Party = string;

export type PauseReason = ("deadline") | ("ancestor deadline");

/** Presence of an identity's current generation, kept apart from its status. */
export type Presence = ((("pausing") | ("paused")) | ("active") | ("idle") | ("parked") | ("stopped"));

/** One-way prewalk state recorded on a snapshot. */
export type Prewalk = {
	status: PrewalkStatus;
	target: string;
};

export type PrewalkStatus = ("armed") | ("handed-off") | ("suppressed-exact") | ("no-op");

/** `profiles`: as `slate profiles --json` (`{toolPolicy, profiles}`); its shape is the profile
 * loader's and documented in `docs/configuration.md`. */
export type ProfilesResult = Record<string, unknown>;

/** What actually happened to a message. None of these means the model understood it. */
export type ReceiptStatus = (("accepted") | ("queued") | ("handled") | ("delivered") | ("not-running") | ("error"));

/** `{type:"changed"|"sdk", child, event?}` — detached snapshots for observers. */
export type RegistryEvent = {
	child: ChildSnapshot;
	event?: unknown;
	type: RegistryEventKind;
};

export type RegistryEventKind = ("changed") | ("sdk");

/** `followup` / `revive`: a new generation of an idle / parked identity. */
export type RenewParams = {
	/** The complete new assignment text. */
	assignment: string;
	/** A JSON Schema for the structured result, validated by policy (`$.resultSchema`). */
	resultSchema?: (Record<string, unknown>) | (null);
	target: Target;
};

/** Successful answers. */
export type Reply = (({
	call: CallId;
	children: Array<ChildSnapshot>;
	kind: "admitted";
}) | ({
	child: ChildSnapshot;
	kind: "snapshot";
}) | ({
	children: Array<ChildSnapshot>;
	kind: "stopped";
}) | ({
	kind: "message";
	message: Message;
}) | ({
	kind: "inbox";
	messages: Array<Message>;
}) | ({
	kind: "wait";
	result: WaitResult;
}) | ({
	kind: "status";
	view: StatusView;
}) | ({
	kind: "ok";
}));

/** Identifies one caller request so the runtime can route the matching `Effect::Reply`. */
export type RequestId = number;

/** `resume`: a paused generation, with a continuation. */
export type ResumeParams = {
	/** The complete continuation text. */
	assignment: string;
	target: Target;
};

/** pi's automatic retry of a failed model request, while it is under way (set from the
 * worker's `auto_retry_start`, cleared by `auto_retry_end` or when the prompt resolves). */
export type Retry = {
	attempt: number;
	delayMs: number;
	maxAttempts: number;
	/** The failed request was answered with HTTP 429 (pi's error message starts with the
	 * status code). */
	rateLimited: boolean;
};

/** The four bundled roles. Custom role names are not supported. */
export type Role = ("scout") | ("review") | ("general") | ("implementation");

/** What a running session knows about routing that the files do not say. */
export type RoutingFacts = {
	/** The host pi's registry as last reported; `null` when no host reported one. */
	hostModels?: (Array<HostModel>) | (null);
	/** The session's remembered successful providers, logical model → provider. */
	rememberedProviders: Record<string, string>;
};

/** `routingFacts` (operator-only): with `hostModels`, the host pi's registry replaces the
 * session's last report first; either way, the session's routing facts are answered. */
export type RoutingFactsParams = {
	hostModels?: (Array<HostModel>) | (null);
};

/** `SchedulingPolicy`: all values finite; there is no unlimited sentinel. */
export type SchedulingPolicy = {
	/** Assignments admitted by one call. */
	batch: number;
	/** Active children, including setup, waiting nested parents and draining. */
	concurrency: number;
	/** Per-window elapsed time from admission or resume; paused time excluded. */
	deadlineMs: number;
	/** Maximum absolute depth (root 0, child 1, grandchild 2); 0 and 1 disable nesting. */
	depth: number;
	/** Waiting assignments, accounting for writer/FIFO blocking as well as capacity. */
	queue: number;
	/** Direct child dispatches into the model registry. */
	requests: number;
	/** Admitted direct children per child lifetime; 0 disables spawning. */
	spawns: number;
	/** Executable child tool invocations, including local delegation. */
	tools: number;
};

/** `shutdown`. */
export type ShutdownResult = {
	shuttingDown: boolean;
};

/** Execution status of one generation.
 * 
 * `queued → setup → running → settled | failed | cancelled`, plus `pausing → paused → queued`
 * for deadline continuation and `draining` while cancellation or publication drains. */
export type Status = ("queued") | ("setup") | ("running") | ("pausing") | ("paused") | ("draining") | ("settled") | ("failed") | ("cancelled");

/** `status`: one generation (with `target`), the fleet, its summary rows (`summary`), or the
 * table's compact rows (`table`). */
export type StatusParams = {
	/** Summary rows instead of full snapshots (ignored with a target). */
	summary?: boolean;
	/** The fleet table's compact rows instead (ignored with a target; over `summary`). */
	table?: boolean;
	target?: ((Target) | (null));
	/** The fleet table as text, exactly as `slate status` prints it (ignored with a target;
	 * over `table` and `summary`). */
	text?: boolean;
};

/** `status`: which answer depends on the params. */
export type StatusResult = ((StatusView) | (FleetStatus) | (FleetSummary) | (FleetTable) | (FleetText));

/** Root `status`: the pinned snapshot, its identity's generations and current presence. */
export type StatusView = {
	agents: Array<AgentPresence>;
	generations: Array<ChildSnapshot>;
	snapshot: ChildSnapshot;
};

/** `steer`: a running generation. */
export type SteerParams = {
	target: Target;
	text: string;
};

/** `stopMany`. */
export type StopManyParams = {
	targets: Array<Target>;
};

/** What a changing `progress` holds while a worker streams. */
export type Streaming = (("assistant") | ("tool"));

/** Structured-result protocol state (`resultSchema` tasks only). */
export type StructuredOutcome = {
	attempts: number;
	errors: Array<string>;
	finalized: boolean;
	validation: Validation;
	/** The accepted value, `null` included: a submitted `null` is `"value": null` wherever
	 * the outcome is written or read back. Absent while no value was accepted. */
	value?: unknown;
};

/** `submit` (child-only): one `submit_result` attempt. */
export type SubmitParams = {
	/** The value exactly as the model wrote it; validated strictly (no coercion) against the
	 * generation's `resultSchema`. */
	value: unknown;
};

/** `submit`: what became of the attempt. */
export type SubmitResult = {
	/** Validation attempts so far (duplicates and refused calls are not attempts). */
	attempts: number;
	/** This attempt's errors, `"<JSON Pointer>: <message>"`, at most 32; empty unless invalid. */
	errors: Array<string>;
	/** What to tell the model (the `submit_result` tool's output). */
	message: string;
	/** `submitted` (valid, and now final), `invalid` (may be corrected and submitted again)
	 * or `duplicate` (a valid value was accepted before; nothing changed, not an attempt). */
	status: SubmitStatus;
};

/** What became of one attempt. */
export type SubmitStatus = (("submitted") | ("invalid") | ("duplicate"));

/** `subscribe`. */
export type SubscribeResult = {
	subscribed: boolean;
};

/** One generation as the fleet table shows it. */
export type SummaryRow = {
	/** Newest activity, clipped to [`SUMMARY_CHARS`]. */
	activity?: (string) | (null);
	/** Clipped to [`SUMMARY_CHARS`]. */
	assignment: string;
	createdAt: number;
	/** When the outcome of the generation's latest window reached its parent
	 * ([`ChildSnapshot::delivered_at`]); absent until then. */
	deliveredAt?: (number) | (null);
	depth: number;
	disposed: boolean;
	endedAt?: (number) | (null);
	generation: number;
	id: string;
	/** The real parent: the root's id at depth 1. */
	parentId: string;
	/** The identity's presence (rows are current generations); absent in read-only history. */
	presence?: ((Presence) | (null));
	profile: Role;
	status: Status;
	telemetry: SummaryTelemetry;
	writerLease: boolean;
};

/** Direct usage of the generation; `null` means unavailable (never shown as zero). */
export type SummaryTelemetry = {
	cost?: (number) | (null);
	requests?: (number) | (null);
	tokens?: ((TokenTotal) | (null));
};

/** One current generation as the table shows it: a JSON array of these fifteen values, in
 * this order (`[id, generation, parent, depth, profile, status, assignment, activity,
 * requests, tokens, cost, createdAt, endedAt, writerLease, presence]`). Its text is clipped
 * like a summary row's. */
export type TableRow = [string, number, (string) | (null), number, Role, Status, string, (string) | (null), (number) | (null), (number) | (null), (number) | (null), number, (number) | (null), boolean, ((Presence) | (null))];

/** An exact generation (never a prefix, never "latest"): the string "UUID@generation" (36-character hyphenated UUID; generation from 1, no leading zero), or the contract's object {"id": "UUID", "generation": N}. Slate always writes the string. */
export type Target = ((string) | ({
	generation: number;
	id: string;
}));

/** `stop`, `park`: one exact generation. */
export type TargetParams = {
	target: Target;
};

/** One current generation, as completion shows it. */
export type TargetRow = {
	/** The first 8 hex digits of the id, `@N` after a first generation: display only. */
	handle: string;
	/** The assignment's first line, sanitized, at most [`HEADLINE_MAX`] columns. */
	headline: string;
	role: Role;
	status: Status;
	/** The exact identity a completion inserts. */
	target: Target;
};

/** `targets`: the current generations in admission order. */
export type TargetsResult = {
	targets: Array<TargetRow>;
};

/** Direct telemetry of one generation. `null` means unavailable; a reported zero stays zero.
 * No subtree total is ever synthesized. */
export type Telemetry = {
	context?: ((ContextUsage) | (null));
	/** US dollars. */
	cost?: (number) | (null);
	/** How the worker's process started: bound from the pre-started pool or started cold
	 * (pi workers only; absent before the process exists and for simulated workers). */
	launch?: ((Launch) | (null));
	requests?: (number) | (null);
	tokens?: ((Tokens) | (null));
};

export type TokenTotal = {
	total: number;
};

/** Token counts as the worker reports them. */
export type Tokens = {
	cacheRead: number;
	cacheWrite: number;
	input: number;
	output: number;
	total: number;
};

/** `callTool`: what the tool answers. */
export type ToolAnswer = {
	/** The structured answer (snapshots, replies), for renderers and programs. */
	details: unknown;
	isError: boolean;
	/** A background window this call started: its outcome follows as one `toolOutcome`
	 * notification on this connection. */
	pending?: (number) | (null);
	/** What the model reads (terminal controls removed). */
	text: string;
};

/** `toolOutcome` notification: a background call's window drained. */
export type ToolOutcome = {
	/** The window's call number (the answer's `pending`). */
	call: number;
	callId?: (string) | (null);
	/** The window outcome. */
	details: unknown;
	rows: Array<ToolRow>;
	/** The model-facing preview of the outcomes. */
	text: string;
};

/** One child of a running tool call, as a live line shows it. */
export type ToolRow = {
	/** The latest activity (one line, sanitized). */
	activity?: (string) | (null);
	/** Published artifact paths, relative to the coordinator's directory where inside it. */
	artifacts?: Array<string>;
	/** US dollars. */
	cost?: (number) | (null);
	/** Milliseconds since the generation was created (to its end once it ended). */
	elapsedMs: number;
	/** The short handle people read (8 hex digits, `@N` after the first generation). */
	handle: string;
	/** Once ended: the result's first line, or the error (one line, sanitized). */
	headline?: (string) | (null);
	/** The row as one line of text: status mark, role, handle, elapsed, tokens, cost, then
	 * the headline once ended or the latest activity. */
	line: string;
	role: string;
	status: string;
	/** `UUID@generation`. */
	target: string;
	tokens?: (number) | (null);
};

/** One tool as a host registers it. */
export type ToolSpec = {
	/** What the model reads about the tool. */
	description: string;
	/** A short title for people. */
	label: string;
	name: string;
	/** The input schema to register: an object whose properties carry descriptions (with
	 * their type and bounds) and no types, so the host coerces nothing; Slate validates
	 * the input strictly. */
	parameters: Record<string, unknown>;
	/** Extra guidance lines for the host's system prompt. */
	promptGuidelines?: Array<string>;
	/** One line for the host's system prompt. */
	promptSnippet: string;
};

/** `toolUpdate` notification: the live rows of a running call. */
export type ToolUpdate = {
	/** The window's call number. */
	call: number;
	callId?: (string) | (null);
	rows: Array<ToolRow>;
	/** One line per child, as [`ToolRow`]s say it. */
	text: string;
};

/** `tools`: the caller's tools. */
export type ToolsResult = {
	tools: Array<ToolSpec>;
};

/** `transcript`: one exact generation's messages, from the start or after a cursor. */
export type TranscriptParams = {
	/** The `cursor` of an earlier answer for the same target: only the messages recorded
	 * after it are returned. Absent: every message. */
	after?: (number) | (null);
	target: Target;
};

/** `transcript`: pi session `message` entries of exactly one generation, as pi wrote them. */
export type TranscriptResult = {
	/** Where this answer ends (an opaque position in the session file, after its last
	 * complete entry): pass it as `after` to read only what is recorded later. */
	cursor: number;
	/** pi's own message objects (`role`, `content`, …); their shape is pi's. With `after`,
	 * only those recorded after it (unless `restarted`). */
	messages: Array<Record<string, unknown>>;
	/** `after` no longer matched the session file (it was replaced or shortened), so
	 * `messages` are every message from the start: the caller replaces what it had. */
	restarted?: boolean;
	target: Target;
};

export type Validation = ("awaiting") | ("invalid") | ("submitted");

/** What a `wait` on a target returns: identity and status only, no peer result or transcript. */
export type WaitOutcome = {
	generation: number;
	id: string;
	limitReason?: ((LimitReason) | (null));
	pauseReason?: ((PauseReason) | (null));
	status: Status;
};

/** `wait`: `timeoutMs` 1..=60000; `target` and `messageId` together are refused. */
export type WaitParams = {
	messageId?: ((MessageRef) | (null));
	target?: ((Target) | (null));
	/** How long to wait, in milliseconds. */
	timeoutMs: number;
};

/** How a wait ended. */
export type WaitResult = (({
	kind: "outcome";
	outcome: WaitOutcome;
}) | ({
	kind: "messages";
	messages: Array<Message>;
}) | ({
	kind: "message";
	message: Message;
}) | ({
	kind: "timeout";
}) | ({
	kind: "cancelled";
}) | ({
	kind: "shutdown";
}));

/** The execution window: admission or an explicit resume starts a new one. */
export type Window = {
	/** When the deadline pauses this window (`startedAt + limits.deadlineMs`). */
	deadlineAt: number;
	/** 1 for the admission window, +1 per resume. */
	number: number;
	startedAt: number;
};

export type WindowOutcome = {
	call: CallId;
	delivery: Delivery;
	initiator: Party;
	/** Ordered as admitted. */
	outcomes: Array<ChildSnapshot>;
	request: RequestId;
};

/** A unit a pattern matched that no worker loads, and why. */
export type Withheld = {
	path: string;
	reason: string;
	source: string;
};

/** A unit every worker loads. */
export type WorkerExtension = {
	/** Absolute: given to pi as `-e <path>`. */
	path: string;
	source: string;
	/** Named in the worker's `--tools` (pi's ceiling for extension tools too). */
	tools: Array<string>;
};

/** Every method: its params and result. */
export interface GenMethods {
	agents: { params: NoParams; result: Array<AgentPresence> };
	callTool: { params: CallToolParams; result: ToolAnswer };
	delegate: { params: DelegateParams; result: DelegateResult };
	followup: { params: RenewParams; result: Reply };
	guard: { params: GuardParams; result: GuardResult };
	hello: { params: HelloParams; result: HelloResult };
	hostExtensions: { params: HostExtensionsParams; result: HostExtensionsResult };
	inbox: { params: NoParams; result: Reply };
	message: { params: MessageParams; result: Reply };
	outcomeDelivered: { params: OutcomeDeliveredParams; result: OutcomeDeliveredResult };
	parentToolEnd: { params: ParentToolEndParams; result: ParentToolEndResult };
	parentToolStart: { params: ParentToolStartParams; result: ParentToolStartResult };
	park: { params: TargetParams; result: Reply };
	policy: { params: NoParams; result: SchedulingPolicy };
	profiles: { params: NoParams; result: ProfilesResult };
	resume: { params: ResumeParams; result: Reply };
	revive: { params: RenewParams; result: Reply };
	routingFacts: { params: RoutingFactsParams; result: RoutingFacts };
	shutdown: { params: NoParams; result: ShutdownResult };
	status: { params: StatusParams; result: StatusResult };
	steer: { params: SteerParams; result: Reply };
	stop: { params: TargetParams; result: Reply };
	stopMany: { params: StopManyParams; result: Reply };
	submit: { params: SubmitParams; result: SubmitResult };
	subscribe: { params: NoParams; result: SubscribeResult };
	targets: { params: NoParams; result: TargetsResult };
	tools: { params: NoParams; result: ToolsResult };
	transcript: { params: TranscriptParams; result: TranscriptResult };
	wait: { params: WaitParams; result: Reply };
}

/** A server → client line without an id. */
export type GenNotification = Notification;

/** An error answer. */
export type GenError = ControlError;

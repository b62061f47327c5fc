/**
 * The overlay's transport without pi (hub_overlay.ts wires it to pi): frames from
 * `slate hub --frames` (src/ui/hub/frames.rs says the protocol), terminal input as the Hub's
 * input lines, and a frame fitted to the area pi gives it.
 */
/** One frame from the Hub. */
export interface HubFrame {
	size: [number, number];
	rows: string[];
}

/** One line to the Hub. */
export type HubInput = { size: [number, number] } | { key: string } | { paste: string };

const PASTE_START = "\x1b[200~";
const PASTE_END = "\x1b[201~";

/** A frame line, if `line` is one. */
export function parseFrame(line: string): HubFrame | undefined {
	try {
		const value: unknown = JSON.parse(line);
		if (typeof value !== "object" || value === null) {
			return undefined;
		}
		const { size, rows } = value as { size?: unknown; rows?: unknown };
		if (
			!Array.isArray(size) ||
			size.length !== 2 ||
			!size.every((n) => typeof n === "number") ||
			!Array.isArray(rows) ||
			!rows.every((r) => typeof r === "string")
		) {
			return undefined;
		}
		return { size: [size[0] as number, size[1] as number], rows: rows as string[] };
	} catch {
		return undefined;
	}
}

/**
 * Terminal input as the Hub's lines: a bracketed paste whole (it may span several chunks;
 * `paste` holds the part read so far), a key as pi names it, and typed text that pi does not
 * name (`é`, `界`) one character at a time. Anything else (an unnamed escape sequence) is
 * dropped.
 */
export function hubInputs(
	data: string,
	paste: { buffer: string | undefined },
	name: (data: string) => string | undefined,
): HubInput[] {
	const out: HubInput[] = [];
	let rest = data;
	while (rest !== "") {
		if (paste.buffer !== undefined) {
			const end = rest.indexOf(PASTE_END);
			if (end === -1) {
				paste.buffer += rest;
				return out;
			}
			out.push({ paste: paste.buffer + rest.slice(0, end) });
			paste.buffer = undefined;
			rest = rest.slice(end + PASTE_END.length);
			continue;
		}
		const start = rest.indexOf(PASTE_START);
		if (start !== -1) {
			out.push(...keyInputs(rest.slice(0, start), name));
			paste.buffer = "";
			rest = rest.slice(start + PASTE_START.length);
			continue;
		}
		out.push(...keyInputs(rest, name));
		break;
	}
	return out;
}

function keyInputs(data: string, name: (data: string) => string | undefined): HubInput[] {
	if (data === "") {
		return [];
	}
	const named = name(data);
	if (named !== undefined) {
		return [{ key: named }];
	}
	// Plain text pi has no name for: each character is a key.
	if (!/[\u0000-\u001f\u007f]/.test(data)) {
		return [...data].map((c) => ({ key: c }));
	}
	return [];
}

/** The rows pi shows for a frame in an area of `width`×`height`. */
export function fitFrame(
	rows: readonly string[],
	width: number,
	height: number,
	truncate: (line: string, width: number, ellipsis: string) => string,
): string[] {
	const out = rows.slice(0, height).map((r) => truncate(r, width, ""));
	while (out.length < height) {
		out.push("");
	}
	return out;
}

/** `workerExtensions`: the host's load units as the extension reports them. */
import assert from "node:assert/strict";
import { test } from "node:test";

import { hostUnits } from "../host_extensions.ts";

test("tools group into load units by source path; built-ins and SDK tools are not extensions", () => {
	const units = hostUnits([
		{ name: "read", sourceInfo: { path: "builtin:read", source: "builtin" } },
		{ name: "web_search", sourceInfo: { path: "/n/pi-web-search/index.ts", source: "npm:pi-web-search@1.3.1" } },
		{ name: "custom", sourceInfo: { path: "sdk", source: "sdk" } },
		{ name: "fetch_url", sourceInfo: { path: "/n/pi-web-search/index.ts", source: "npm:pi-web-search@1.3.1" } },
		{ name: "delegate_task", sourceInfo: { path: "/d/slate/index.ts", source: "local" } },
		{ name: "orphan" },
	]);
	assert.deepEqual(units, [
		{
			source: "npm:pi-web-search@1.3.1",
			path: "/n/pi-web-search/index.ts",
			tools: [
				{ name: "web_search", path: "/n/pi-web-search/index.ts" },
				{ name: "fetch_url", path: "/n/pi-web-search/index.ts" },
			],
		},
		{ source: "local", path: "/d/slate/index.ts", tools: [{ name: "delegate_task", path: "/d/slate/index.ts" }] },
	]);
});

// Lists ctxkeep's tools and saves then loads a checkpoint, through the official TypeScript MCP SDK.
// Usage: node client.mjs PYTHON (the server is `PYTHON -m ctxkeep serve`; CTXKEEP_DB/CTXKEEP_PROJECT from the environment).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const python = process.argv[2];
const transport = new StdioClientTransport({
  command: python,
  args: ["-m", "ctxkeep", "serve"],
  env: { CTXKEEP_DB: process.env.CTXKEEP_DB, CTXKEEP_PROJECT: process.env.CTXKEEP_PROJECT, HOME: process.env.HOME, PATH: process.env.PATH },
});
const client = new Client({ name: "ts-sdk-check", version: "1.0.0" });
await client.connect(transport);
const { tools } = await client.listTools();
const state = { goal: "Compare 20 supplier quotes", pending: ["Supplier C freight missing"], constraints: ["No final recommendation before the data is complete"] };
const saved = await client.callTool({ name: "checkpoint_save", arguments: { task_id: "ts-task", state } });
const loaded = await client.callTool({ name: "checkpoint_load", arguments: { task_id: "ts-task", format: "json" } });
const refused = await client.callTool({ name: "checkpoint_save", arguments: { task_id: "ts-task", state: { ...state, pending: [] } } });
console.log(JSON.stringify({
  tools: tools.map((t) => t.name).sort(),
  saved: saved.structuredContent,
  loaded: loaded.structuredContent,
  refused: { isError: refused.isError, text: refused.content[0].text },
}));
await client.close();

// The todo board written on the official App SDK (@modelcontextprotocol/ext-apps) instead of
// Flask-MCP's mcp-app.js: same DOM (tests/_apps/templates/todo_board_sdk.html), same tools.
// esbuild bundles it into dist/view-sdk.js; the server inlines that with mcp_app_script().
import { App } from "@modelcontextprotocol/ext-apps";

const listName = document.getElementById("list-name");
const items = document.getElementById("items");
const form = document.getElementById("add-form");
const input = document.getElementById("new-item");
const status = document.getElementById("status");
let current = "today";

function render(result) {
  if (result.isError) {
    status.textContent = result.content.map((block) => block.text).join(" ");
    return;
  }
  const board = result.structuredContent;
  current = board.list;
  listName.textContent = board.list;
  items.replaceChildren(
    ...board.items.map((text) => {
      const item = document.createElement("li");
      item.textContent = text;
      return item;
    }),
  );
  status.textContent = `${board.items.length} items`;
}

const app = new App({ name: "Todo board (App SDK)", version: "1.0.0" }, { availableDisplayModes: ["inline"] });
app.ontoolinput = ({ arguments: args }) => {
  if (args?.list_name) listName.textContent = args.list_name;
};
app.ontoolresult = render;
app.ontoolcancelled = ({ reason }) => {
  status.textContent = `The tool was cancelled: ${reason}`;
};
app.onteardown = async () => ({});

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  status.textContent = "Adding…";
  try {
    render(await app.callServerTool({ name: "add_todo", arguments: { list_name: current, text: input.value } }));
    input.value = "";
  } catch (error) {
    status.textContent = `Could not add the item: ${error.message}`;
  }
});

app.connect();

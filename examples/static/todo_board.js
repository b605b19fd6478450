// The todo board's script: renders a list from a tool result, adds items with add_todo.
"use strict";

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

const app = McpApp.connect({
  name: "Todo board",
  version: "1.0.0",
  onToolInput(args) {
    if (args.list_name) listName.textContent = args.list_name;
  },
  onToolResult: render,
  onToolCancelled(reason) {
    status.textContent = `The tool was cancelled: ${reason}`;
  },
});

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  const text = input.value;
  status.textContent = "Adding…";
  try {
    await app.ready;
    render(await app.callTool("add_todo", { list_name: current, text }));
    input.value = "";
  } catch (error) {
    status.textContent = `Could not add the item: ${error.message}`;
  }
});

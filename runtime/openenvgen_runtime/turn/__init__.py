"""An episode's turn: what the model reads of an observation and what its reply becomes.

Observations rendered for the model (`observations`, its images and audio `media`), the
prompts (`prompts`), replies parsed and validated into actions (`actions`, union actions
`unions`, MCP tools `mcp_tools`, a bare reply that needs no validation `passthrough`), and
what a step earns (`scoring`); every reply of the env server judged before it is read
(`replies`).

Layers: media, mcp_tools, passthrough, scoring, unions < actions, observations, replies < prompts
"""

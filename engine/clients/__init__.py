"""Remote engines: clients of the wire protocol (docs/protocol.md) with the local engine's ``Session``; session
semantics live in the container, these only move frames and name failures."""

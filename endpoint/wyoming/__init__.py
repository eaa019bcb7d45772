"""``voicedesk wyoming``: voicedesk as a Wyoming text-to-speech service (Home Assistant's voice pipeline).

- ``catalog``: the voices a server offers, found through any engine, and how a request's voice is chosen (pure
  except for one probe over the Session API).
- ``info``: the ``info`` answer to ``describe``.
- ``conversation``: one connection's Wyoming TTS protocol as a pure state machine (client events and session events
  in, actions out).
- ``server``: the asyncio adapter: the ``wyoming`` library's TCP server and event handler around one engine session
  per connection.
- ``discovery``: the zeroconf (mDNS) ``_wyoming._tcp`` advertisement.
- ``cli``: the ``voicedesk wyoming`` command.
"""

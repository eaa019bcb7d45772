"""Remote engines: clients of the wire protocol (docs/protocol.md) that expose the same ``Session`` as the local one.

- ``websocket``: a container's ``/invocations-bidirectional-stream`` reached directly;
- ``sagemaker``: the same container behind a SageMaker endpoint (InvokeEndpointWithBidirectionalStream);
- ``invoke``: the whole-request path (``/invocations`` through boto3) for callers that want no session.

Session semantics live in the container; these modules only move frames and name failures clearly.
"""

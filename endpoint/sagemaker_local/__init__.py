"""``voicedesk sagemaker-local``: a local stand-in for the SageMaker runtime's invoke operations.

It speaks the real wire formats (HTTP/2 event streams for InvokeEndpointWithBidirectionalStream, REST for
InvokeEndpoint and InvokeEndpointWithResponseStream) over TLS on 127.0.0.1 and bridges to a container the way
SageMaker does, so the unmodified SDKs, boto3 and voicedesk's sagemaker engine can be tried against a local
container before paying for an endpoint.
"""

"""``voicedesk sagemaker-local``: a stand-in for the SageMaker runtime's invoke operations on 127.0.0.1, speaking the
real wire formats over TLS, so the unmodified SDKs, boto3 and our sagemaker engine can be tried against a local
container before paying for an endpoint."""

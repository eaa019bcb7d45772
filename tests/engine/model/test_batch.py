"""The padded batched forward (``engine.model.batch``) on the real random-weight KModel: each sentence of a batch
comes out as its own unbatched forward would make it, whatever it is batched with."""

from __future__ import annotations

import pytest
import torch

from voicedesk.engine.model.batch import BatchItem, forward_batch, item_of

PIECES = (
    ("hˈI.", "af_heart", 1.0),
    ("ðə kˈæt sˈæt.", "am_adam", 1.0),
    ("wˈʌn mˈɔɹ.", "af_heart", 1.3),
)
"""Different lengths, voices and speeds: the short ones ride in a batch padded to the long one."""


def padded_work(items: list[BatchItem]) -> float:
    """How much of a padded batch is padding: the batch's tokens over the items' own (1.0: none)."""
    lengths = [len(item.input_ids) for item in items]
    return len(lengths) * max(lengths) / sum(lengths) if lengths else 1.0


def _items(synthesizer) -> list[BatchItem]:
    items = []
    for phonemes, voice, speed in PIECES:
        _spec, pack = synthesizer.resolve_voice(voice)
        ids = item_of(synthesizer.model, phonemes, torch.zeros(1, 256), speed).input_ids
        items.append(item_of(synthesizer.model, phonemes, pack[len(ids) - 3], speed))
    return items


def _one_by_one(model, items: list[BatchItem]) -> list[tuple[torch.Tensor, torch.Tensor]]:
    outputs = []
    for item in items:
        ids = torch.tensor([list(item.input_ids)], dtype=torch.long, device=model.device)
        audio, pred_dur = model.forward_with_tokens(ids, item.ref_s.to(model.device), item.speed)
        outputs.append((audio.reshape(-1).cpu(), pred_dur.reshape(-1).cpu()))
    return outputs


@pytest.mark.slow  # six forwards of the CPU model: about a minute on an idle 2-core machine
def test_each_item_of_a_padded_batch_is_its_own_unbatched_audio(synthesizer):
    model = synthesizer.model
    items = _items(synthesizer)
    assert padded_work(items) > 1.2  # the batch really is padded
    torch.manual_seed(7)  # the vocoder's noise: seeded, item k draws what the k-th forward one by one draws
    alone = _one_by_one(model, items)
    torch.manual_seed(7)
    batched = forward_batch(model, items)
    assert len(batched) == len(items)
    for (audio, pred_dur), out in zip(alone, batched, strict=True):
        assert torch.equal(out.pred_dur, pred_dur)
        assert out.audio.shape == audio.shape
        scale = float(audio.abs().max())
        assert float((out.audio - audio).abs().max()) <= 1e-4 * scale  # measured: about 1e-6
    # Not all the same audio: the check above compares different sentences.
    assert len({out.audio.shape[0] for out in batched}) == len(items)


def test_an_interrupt_stops_the_batched_forward(synthesizer):
    calls = []

    def check() -> None:
        calls.append(1)
        if len(calls) > 3:
            raise InterruptedError("stop")

    with pytest.raises(InterruptedError):
        forward_batch(synthesizer.model, _items(synthesizer), check)
    assert len(calls) == 4

"""Speech- and audio-language models (speech-to-text LLMs, audio tokenizers in front of an LLM).

Audio inputs are always ``audio`` modality; an audio tower's role is ``tower`` even when it is a
codec or tokenizer encoder, since it plays the tower's part for freezing and sharding.
"""

from __future__ import annotations

from mmfreeze.resolver.entry import ArchitectureEntry
from mmfreeze.resolver.table_parts import decl, language, projector, standard, tower

AUDIO_STANDARD = standard(
    tower("model.audio_tower", modality="audio"), projector("model.multi_modal_projector", modality="audio"),
)

GRANITE_SPEECH = standard(tower("model.encoder", modality="audio"), projector("model.projector", modality="audio"))

TABLE = {
    **dict.fromkeys(
        (
            "FunAsrNanoForConditionalGeneration",
            "GlmAsrForConditionalGeneration",
            "MossTranscribeDiarizeForConditionalGeneration",
            "OmniASRForConditionalGeneration",
            "Qwen2AudioForConditionalGeneration",
            "Qwen3ASRForConditionalGeneration",
            "VoxtralForConditionalGeneration",
            "VoxtralRealtimeForConditionalGeneration",
        ),
        AUDIO_STANDARD,
    ),
    "GraniteSpeechForConditionalGeneration": GRANITE_SPEECH,
    "GraniteSpeechPlusForConditionalGeneration": GRANITE_SPEECH,
    # Two tokenizer encoders (acoustic, semantic) feed one projector.
    "VibeVoiceAsrForConditionalGeneration": standard(
        tower("model.acoustic_tokenizer_encoder", modality="audio"),
        tower("model.semantic_tokenizer_encoder", modality="audio"),
        projector("model.multi_modal_projector", modality="audio"),
    ),
    # The word-timestamp encoder and head read audio features and predict timings: audio,
    # role ``head`` (they are not on the path into the language model).
    "Nemotron3_5TranscribeForConditionalGeneration": ArchitectureEntry(
        modules=(
            tower("model.audio_tower", modality="audio"),
            projector("model.multi_modal_projector", modality="audio"),
            decl("model.word_timestamp_encoder", modality="audio", role="head"),
            decl("word_timestamp_head", modality="audio", role="head"),
        ),
        language_model=language("model.language_model", embeddings="model.language_model.embeddings"),
    ),
    # Kyutai's decoder reads Mimi codec tokens directly; the codec is the audio tower and runs on
    # every step (no text-only batches), so it is not conditionally executed.
    "KyutaiSpeechToTextForConditionalGeneration": ArchitectureEntry(
        modules=(decl("codec_model", modality="audio", role="tower", conditionally_executed=False),),
        language_model=language("model", embeddings="model.embed_tokens"),
    ),
}

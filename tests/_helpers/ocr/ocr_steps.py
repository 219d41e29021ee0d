"""The Python steps of the PP-OCR pipeline (image decode -> det -> DB postprocessing -> rec ->
CTC decode).

One self-contained file, as a pipeline's Python step must be: numpy and Pillow (the
decoder) only, a data file beside it (``ppocr_keys.txt``, the recogniser's dictionary). The
detector's preprocessing is not here: it is a preprocess step of the pipeline
(``det_preprocess.toml``), which --target ascend folds into the detector as AIPP. The same
functions run in the server's Python backend and in ``opsdk.triton.run_pipeline``.
"""

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SOURCE_HEIGHT, SOURCE_WIDTH = 96, 320
REC_HEIGHT, REC_WIDTH = 48, 320
MAX_BOXES = 16
BIN_THRESHOLD, BOX_THRESHOLD, UNCLIP_RATIO, MIN_SIDE = 0.3, 0.6, 1.5, 3
_KEYS = None


def decode(image):
    """One encoded PNG or JPEG file (a TYPE_STRING tensor of one element) -> its RGB pixels
    uint8 [1, H, W, 3]; a payload that is not an image, or one of another size, fails the
    request with what was expected and the fix."""
    import io

    from PIL import Image, UnidentifiedImageError

    if image.size != 1 or not isinstance(image.flat[0], bytes):
        raise ValueError(f"input 'image' holds {image.size} element(s) of "
                         f"{type(image.flat[0]).__name__ if image.size else 'nothing'}; send "
                         "one element: the bytes of one PNG or JPEG file")
    try:
        with Image.open(io.BytesIO(image.flat[0])) as img:
            pixels = np.asarray(img.convert("RGB"), dtype=np.uint8)
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as e:
        raise ValueError(f"input 'image' ({len(image.flat[0])} bytes) is not a readable PNG "
                         f"or JPEG file ({type(e).__name__}: {e}); send the file's bytes as "
                         "they are on disk") from None
    if pixels.shape != (SOURCE_HEIGHT, SOURCE_WIDTH, 3):
        raise ValueError(f"input 'image' is {pixels.shape[1]}x{pixels.shape[0]} pixels, the "
                         f"pipeline takes {SOURCE_WIDTH}x{SOURCE_HEIGHT}; resize it first")
    return {"pixels": pixels[None]}


def _components(mask):
    """4-connected labels of a boolean map (0 background): each pixel takes the smallest
    label among itself and its neighbours, then the label of the pixel its label names
    (pointer jumping), until nothing changes."""
    h, w = mask.shape
    big = h * w
    flat = np.where(mask.ravel(), np.arange(h * w), big)
    while True:
        grid = flat.reshape(h, w)
        padded = np.pad(grid, 1, constant_values=big)
        nxt = np.minimum.reduce([grid, padded[:-2, 1:-1], padded[2:, 1:-1],
                                 padded[1:-1, :-2], padded[1:-1, 2:]]).ravel()
        nxt = np.where(mask.ravel(), nxt, big)
        fg = nxt < big
        while True:  # jump: a label is a pixel index, take that pixel's label
            jumped = nxt.copy()
            jumped[fg] = nxt[nxt[fg]]
            if np.array_equal(jumped, nxt):
                break
            nxt = jumped
        if np.array_equal(nxt, flat):
            return np.where(mask, flat.reshape(h, w) + 1, 0)
        flat = nxt


def _boxes(prob):
    """DB postprocessing with axis-aligned boxes: threshold, components, box score, unclip."""
    h, w = prob.shape
    labels = _components(prob > BIN_THRESHOLD)
    boxes = []
    for label in np.unique(labels[labels > 0]):
        ys, xs = np.nonzero(labels == label)
        y0, y1, x0, x1 = ys.min(), ys.max() + 1, xs.min(), xs.max() + 1
        if min(y1 - y0, x1 - x0) < MIN_SIDE or prob[ys, xs].mean() < BOX_THRESHOLD:
            continue
        bw, bh = x1 - x0, y1 - y0
        d = int(round(bw * bh * UNCLIP_RATIO / (2 * (bw + bh))))
        boxes.append((max(x0 - d, 0), max(y0 - d, 0), min(x1 + d, w), min(y1 + d, h)))
    boxes.sort(key=lambda b: (b[1] // 8, b[0]))  # reading order: rows, then left to right
    return np.array(boxes[:MAX_BOXES], dtype=np.int32).reshape(-1, 4)


def _resize(img, out_h, out_w):
    """Bilinear resize (half-pixel centres) of a float [H, W, C] image."""
    h, w = img.shape[:2]
    ys = np.clip((np.arange(out_h) + 0.5) * h / out_h - 0.5, 0, h - 1)
    xs = np.clip((np.arange(out_w) + 0.5) * w / out_w - 0.5, 0, w - 1)
    y0, x0 = np.floor(ys).astype(int), np.floor(xs).astype(int)
    y1, x1 = np.minimum(y0 + 1, h - 1), np.minimum(x0 + 1, w - 1)
    fy, fx = (ys - y0)[:, None, None], (xs - x0)[None, :, None]
    top = img[y0][:, x0] * (1 - fx) + img[y0][:, x1] * fx
    bottom = img[y1][:, x0] * (1 - fx) + img[y1][:, x1] * fx
    return top * (1 - fy) + bottom * fy


def det_post(prob, pixels):
    """The detector's map -> text boxes [N, 4] (x0, y0, x1, y1) and the recogniser's crops
    [max(N, 1), 3, 48, 320] (height 48, aspect kept, (x / 255 - 0.5) / 0.5, zero-padded)."""
    boxes, image = _boxes(prob[0, 0]), pixels[0]
    crops = np.zeros((max(len(boxes), 1), 3, REC_HEIGHT, REC_WIDTH), np.float32)
    for i, (x0, y0, x1, y1) in enumerate(boxes):
        crop = image[y0:y1, x0:x1].astype(np.float32)
        width = min(REC_WIDTH, int(np.ceil(REC_HEIGHT * (x1 - x0) / (y1 - y0))))
        resized = _resize(crop, REC_HEIGHT, width)
        crops[i, :, :, :width] = ((resized / 255.0 - 0.5) / 0.5).transpose(2, 0, 1)
    return {"boxes": boxes, "crops": crops}


def rec_post(probs, boxes):
    """CTC greedy decoding: per box, the argmax path without repeats and blanks (class 0),
    classes 1.. through the dictionary, the last class a space."""
    global _KEYS
    if _KEYS is None:
        _KEYS = (HERE / "ppocr_keys.txt").read_text(encoding="utf-8").split("\n") + [" "]
    texts = []
    for row in probs[: len(boxes)]:
        best = row.argmax(axis=-1)
        keep = (best != 0) & np.concatenate([[True], best[1:] != best[:-1]])
        texts.append("".join(_KEYS[i - 1] for i in best[keep]).encode("utf-8"))
    return {"texts": np.array(texts, dtype=object).reshape(-1)}

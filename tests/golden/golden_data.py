# Synthetic, seeded image batches for the model goldens: u8 pixels of class-dependent blob
# patterns (so the loss can fall), normalized like the train block: (u8/255 - mean)/std in f32.
import torch


def _templates(g, classes, c, h, w):
    # One pattern per class: three gaussian blobs with class-specific centers, widths and tints.
    ys = torch.arange(h, dtype=torch.float32).reshape(h, 1)
    xs = torch.arange(w, dtype=torch.float32).reshape(1, w)
    out = torch.zeros(classes, c, h, w)
    for k in range(classes):
        for _ in range(3):
            cy = float(torch.rand((), generator=g)) * (h - 1)
            cx = float(torch.rand((), generator=g)) * (w - 1)
            sigma = 1.5 + float(torch.rand((), generator=g)) * h / 6.0
            blob = torch.exp(-((ys - cy) ** 2 + (xs - cx) ** 2) / (2.0 * sigma * sigma))
            tint = 0.4 + 0.6 * torch.rand(c, generator=g)
            out[k] += tint.reshape(c, 1, 1) * blob
    return out.clamp(0.0, 1.0)


def make_batches(seed, steps, batch, shape, mean, std):
    """Returns `steps` pairs (x f32[batch, *shape], y i64[batch]) from a generator seeded with
    `seed`: labels uniform in [0, 10), pixels = the label's template, shifted by up to 2 px,
    scaled by a random contrast, plus noise, rounded to u8, then normalized per channel."""
    c, h, w = shape
    assert len(mean) == c and len(std) == c, "one mean/std per channel"
    g = torch.Generator().manual_seed(seed)
    templates = _templates(g, 10, c, h, w)
    mean_t = torch.tensor(mean, dtype=torch.float32).reshape(1, c, 1, 1)
    std_t = torch.tensor(std, dtype=torch.float32).reshape(1, c, 1, 1)
    batches = []
    for _ in range(steps):
        y = torch.randint(0, 10, (batch,), generator=g)
        imgs = torch.empty(batch, c, h, w)
        for i in range(batch):
            dy, dx = (int(v) for v in torch.randint(-2, 3, (2,), generator=g))
            contrast = 0.7 + 0.3 * float(torch.rand((), generator=g))
            imgs[i] = torch.roll(templates[int(y[i])], shifts=(dy, dx), dims=(1, 2)) * contrast
        imgs = imgs + 0.1 * torch.randn(imgs.shape, generator=g)
        u8 = (imgs.clamp(0.0, 1.0) * 255.0).round().to(torch.uint8)
        x = (u8.to(torch.float32) / 255.0 - mean_t) / std_t
        batches.append((x, y))
    return batches

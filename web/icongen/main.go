// Command icongen draws Countersign's app icons into static/icons: a check
// mark on the brand blue, plain and maskable (with the safe zone), and the
// apple-touch-icon. Run it from the repository root: go run ./web/icongen.
package main

import (
	"image"
	"image/color"
	"image/png"
	"log"
	"math"
	"os"
	"path/filepath"
)

var (
	blue  = color.RGBA{0x1f, 0x4f, 0xd1, 0xff}
	white = color.RGBA{0xff, 0xff, 0xff, 0xff}
)

// draw makes a size×size icon; inset is the share of the edge left for the
// maskable safe zone, rounded says whether corners are cut round.
func draw(size int, inset float64, rounded bool) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, size, size))
	s := float64(size)
	r := s * 0.22
	// The check mark: two strokes through these points, in the unit square.
	pts := [][2]float64{{0.28, 0.53}, {0.44, 0.69}, {0.74, 0.35}}
	scale := 1 - 2*inset
	width := s * 0.085 * scale
	for y := 0; y < size; y++ {
		for x := 0; x < size; x++ {
			fx, fy := float64(x)+.5, float64(y)+.5
			if rounded && outsideRounded(fx, fy, s, r) {
				continue
			}
			c := blue
			for i := 0; i+1 < len(pts); i++ {
				ax, ay := (inset+pts[i][0]*scale)*s, (inset+pts[i][1]*scale)*s
				bx, by := (inset+pts[i+1][0]*scale)*s, (inset+pts[i+1][1]*scale)*s
				if distToSegment(fx, fy, ax, ay, bx, by) <= width {
					c = white
				}
			}
			img.Set(x, y, c)
		}
	}
	return img
}

func outsideRounded(x, y, s, r float64) bool {
	cx := math.Min(math.Max(x, r), s-r)
	cy := math.Min(math.Max(y, r), s-r)
	return math.Hypot(x-cx, y-cy) > r
}

func distToSegment(px, py, ax, ay, bx, by float64) float64 {
	dx, dy := bx-ax, by-ay
	t := ((px-ax)*dx + (py-ay)*dy) / (dx*dx + dy*dy)
	t = math.Max(0, math.Min(1, t))
	return math.Hypot(px-(ax+t*dx), py-(ay+t*dy))
}

func write(name string, img image.Image) {
	path := filepath.Join("static", "icons", name)
	f, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	if err := png.Encode(f, img); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
}

func main() {
	if err := os.MkdirAll(filepath.Join("static", "icons"), 0o755); err != nil {
		log.Fatal(err)
	}
	write("icon-192.png", draw(192, 0, true))
	write("icon-512.png", draw(512, 0, true))
	write("maskable-512.png", draw(512, 0.1, false))
	write("apple-touch-icon.png", draw(180, 0.04, false))
}

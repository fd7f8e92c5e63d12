package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
)

// listDevices: GET /api/devices, newest first, paginated.
func (s *Server) listDevices(c *gin.Context) error {
	p, err := page(c)
	if err != nil {
		return err
	}
	devices, err := s.svc.Devices(c, p)
	if err != nil {
		return err
	}
	out := make([]deviceView, 0, len(devices))
	for i := range devices {
		out = append(out, s.deviceView(&devices[i]))
	}
	c.JSON(http.StatusOK, out)
	return nil
}

// syncDevice: PUT or PATCH /api/devices/:udid finds or creates the device and sets the fields
// sent (fastlane's zealot_sync_devices sends name and model). 201 when it was created.
func (s *Server) syncDevice(c *gin.Context) error {
	p, err := readParams(c)
	if err != nil {
		return err
	}
	var ch distribution.DeviceChanges
	for name, dst := range map[string]*string{"name": &ch.Name, "model": &ch.Model, "platform": &ch.Platform,
		"device_id": &ch.DeviceID, "status": &ch.Status} {
		if *dst, err = p.str(name); err != nil {
			return err
		}
	}
	d, created, err := s.svc.SyncDevice(c, c.Param("udid"), ch)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	c.JSON(status, s.deviceView(d))
	return nil
}
